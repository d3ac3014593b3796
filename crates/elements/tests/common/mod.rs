//! Helpers shared by the element tests: parse a configuration with the full
//! element registry, build a router, run it.
#![allow(dead_code)] // each test binary uses its own subset

use linerate_io::pcap::{LinkType, PcapWriter};
use linerate_lang::{parse_str, Config, ParseOptions};
use linerate_runtime::{Registry, Router, RouterOptions};

/// Parse `text` (as `test.click`) against `reg`, panicking on errors.
pub fn config(reg: &Registry, text: &str) -> Config {
    let opts = ParseOptions {
        vars: vec![],
        catalog: reg,
        clickpath: vec![],
    };
    parse_str(text, "test.click", &opts).unwrap_or_else(|e| panic!("parse error: {e}"))
}

/// Build a router from `text` with the full registry; errors as text.
pub fn build(text: &str, opts: RouterOptions) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let c = config(&reg, text);
    Router::build(&c, &reg, opts).map_err(|d| d.to_string())
}

/// Build and run a router to completion.
pub fn run(text: &str, opts: RouterOptions) -> Router {
    let mut r = build(text, opts).unwrap_or_else(|e| panic!("{e}"));
    r.run();
    r
}

/// Write `pkts` (link type `link`) to a pcap file in a fresh temporary
/// directory `name`, run `FromDump(file, STOP true, BURST burst) -> decl`
/// (`decl` declares an element as `e :: CLASS(...)`), each of `e`'s `n`
/// outputs into a `Counter` then `Discard`; the router and the packet
/// count of every output.
pub fn run_outputs(
    link: LinkType,
    pkts: &[Vec<u8>],
    burst: usize,
    decl: &str,
    n: usize,
    name: &str,
) -> (Router, Vec<String>) {
    let d = std::env::temp_dir().join(format!("linerate-out-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let inp = d.join("in.pcap");
    let mut w = PcapWriter::create(&inp, link, 0, false).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write(1_000_000_000 * (i as u64 + 1), p.len() as u32, p)
            .unwrap();
    }
    w.flush().unwrap();
    let e = decl.split("::").next().unwrap_or(decl).trim();
    let mut text = format!(
        "FromDump({}, STOP true, BURST {burst}) -> {decl};\n",
        inp.display()
    );
    for k in 0..n {
        text.push_str(&format!("{e}[{k}] -> c{k} :: Counter -> Discard;\n"));
    }
    let r = run(&text, RouterOptions::default());
    let _ = std::fs::remove_dir_all(&d);
    let counts = (0..n).map(|k| read(&r, &format!("c{k}.count"))).collect();
    (r, counts)
}

/// Read handler `h` (`element.handler`) of `r`, without the final newline.
pub fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.strip_suffix('\n').unwrap_or(&v).to_string()
}
