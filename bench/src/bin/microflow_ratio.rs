//! Packets per microflow against the fast path's table size: TurboFlow's
//! headline figure.
//!
//! `microflow_ratio TRACE.pcap...` runs, for each trace, each table size
//! (0.25, 0.5, 1, 2, 4 and 16 MB) and 1- and 2-way tables,
//!
//! ```click
//! FromDump(TRACE, STOP true) -> PARSER -> mt :: MicroflowTable(TABLE size, WAYS w, TCPEND false)
//!   -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false) -> Discard;
//! ```
//!
//! and prints a Markdown table of packets per microflow (`mt.packets /
//! mt.microflows`: evictions by collision, plus the final flush), with the
//! trace's packets per flow (the ceiling) in the first column. PARSER is
//! `L4Parser` when the registry has it, else `CheckIPHeader(14)` (then only
//! untagged IPv4 is metered; the table says which).

use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterOptions};
use std::process::ExitCode;

const SIZES: [(&str, &str); 6] = [
    ("0.25 MB", "256KB"),
    ("0.5 MB", "512KB"),
    ("1 MB", "1MB"),
    ("2 MB", "2MB"),
    ("4 MB", "4MB"),
    ("16 MB", "16MB"),
];

fn run(text: &str) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let opts = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "<ratio>", &opts).map_err(|d| d.to_string())?;
    let mut r = Router::build(&c, &reg, RouterOptions::default()).map_err(|d| d.to_string())?;
    r.run();
    Ok(r)
}

fn read(r: &Router, h: &str) -> f64 {
    r.handle()
        .call(h, None)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

fn main() -> ExitCode {
    let traces: Vec<String> = std::env::args().skip(1).collect();
    if traces.is_empty() {
        eprintln!("usage: microflow_ratio TRACE.pcap...");
        return ExitCode::from(2);
    }
    let parser = if linerate_elements::registry().get("L4Parser").is_some() {
        "L4Parser"
    } else {
        "CheckIPHeader(14)"
    };
    println!("Parser: `{parser}`. Packets per microflow (collision evictions and the final flush; no timeouts, no FIN eviction).\n");
    let mut head = String::from("| trace (packets per flow) | ways |");
    let mut rule = String::from("|---|---:|");
    for (label, spec) in SIZES {
        let slots = linerate_elements::flow::microflowtable::SLOT_BYTES;
        let bytes: usize = match spec.strip_suffix("KB") {
            Some(k) => k.parse::<usize>().unwrap_or(0) << 10,
            None => spec.trim_end_matches("MB").parse::<usize>().unwrap_or(0) << 20,
        };
        head.push_str(&format!(" {label} ({}k slots) |", bytes / slots / 1000));
        rule.push_str("---:|");
    }
    println!("{head}\n{rule}");
    for t in &traces {
        let name = std::path::Path::new(t)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| t.clone());
        for ways in [1, 2] {
            let mut row = String::new();
            let mut ppf = 0.0;
            for (_, spec) in SIZES {
                let text = format!(
                    "FromDump(\"{t}\", STOP true) -> {parser} -> mt :: MicroflowTable(TABLE {spec}, WAYS {ways}, TCPEND false)
                     -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false) -> Discard;"
                );
                let r = match run(&text) {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("microflow_ratio: {e}");
                        return ExitCode::FAILURE;
                    }
                };
                let (p, m, f) = (
                    read(&r, "mt.packets"),
                    read(&r, "mt.microflows"),
                    read(&r, "fa.flows"),
                );
                ppf = p / f.max(1.0);
                row.push_str(&format!(" {:.2} |", p / m.max(1.0)));
            }
            println!("| {name} ({ppf:.2}) | {ways} |{row}");
        }
    }
    ExitCode::SUCCESS
}
