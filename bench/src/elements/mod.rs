//! The per-element benchmark table (`linerate bench elements`).
//!
//! Each [`Case`] names an element configuration and the traffic it gets.
//! The runner writes the traffic to a pcap file, loads it into a
//! `MemoryReplay(FILE ..., COPY true)` source (frames held in memory,
//! replayed round-robin, each copied into the packet's own writable buffer
//! as a NIC's receive DMA would leave it) and times, on the thread's CPU
//! clock, three single-threaded routers:
//!
//! ```click
//! src :: MemoryReplay(FILE f, COPY true, LIMIT n, STOP true) -> Discard;     // base
//! src :: MemoryReplay(...) -> e :: ELEMENT; e[k] -> Discard;                 // element
//! src :: MemoryReplay(...) -> e :: REFERENCE; e[k] -> Discard;               // reference
//! ```
//!
//! interleaved, `runs` times each. An element's cost is
//! `(median(element) - median(base)) / n`: what it adds to a packet's trip
//! through the framework, batches of 64 included. Throughput is the inverse
//! of that cost (Mpps) and, for elements that touch every byte, the frame
//! bits per nanosecond (Gbps; frame length as the element sees it, without
//! preamble, gap or FCS). The speed-up column divides the reference
//! implementation's cost by the element's. The last column is the core's
//! speed around the row's runs, the slower of two probes just before and
//! just after them (`linerate_model::CoreSpeed`): its clock (dependent
//! additions a nanosecond) and its issue rate (independent additions a
//! nanosecond). On a shared host the clock falls to about half for seconds
//! at a time, and another tenant's thread on the same physical core takes a
//! third or more of its issue rate at full clock; every time in the row
//! moves with either. Each of a row's rounds (base, element, reference) is
//! probed before and after; a round around which either probe read below
//! 90 % of its fastest so far is measured again, up to three times, and the
//! column shows the slowest probes of the rounds kept. The table's last
//! line counts the retakes and the rounds kept slow.

mod crypto;
mod encap;
mod flow;
mod flowexport;
mod parse;
mod sched;
mod scion;
mod standard;
mod tables_hash;
mod tables_lpm;
pub mod traffic;

use linerate_model::{CoreSpeed, Machine, SpeedGuard};
use std::path::{Path, PathBuf};

/// Additions in each chain of the core probes around a round (about 10 ms
/// at 3.7 GHz, three chains of each probe).
const PROBE_STEPS: u32 = 10_000_000;

/// A goal from the issue, per core.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// At least this many million packets per second.
    Mpps(f64),
    /// At least this many Gbit/s at the largest packet size of the case.
    Gbps(f64),
}

/// One row group of the table: an element configuration and its traffic.
pub struct Case {
    /// Element class, e.g. `L4Parser`.
    pub element: &'static str,
    /// The element as written in a configuration, e.g. `AESCTR(KEY ..., OFFSET 42)`.
    /// It may use files the case wrote into the scratch directory.
    pub config: String,
    /// Short description of the configuration for the table.
    pub what: String,
    /// The reference (straightforward) implementation's configuration, if any.
    pub reference: Option<String>,
    /// Extra declarations the configuration needs (may be empty).
    pub prelude: String,
    /// Output ports of the element to connect to `Discard`.
    pub outputs: usize,
    /// Frame sizes to run (one row each); header-only elements use `[64]`.
    pub sizes: Vec<usize>,
    /// The traffic for a frame size: frames replayed round-robin.
    pub frames: Box<dyn Fn(usize) -> Vec<Vec<u8>>>,
    /// Whether the element touches every byte (report Gbps).
    pub per_byte: bool,
    /// Packets per run, relative to the `--packets` option (e.g. 0.2 for
    /// expensive per-byte work).
    pub scale: f64,
    /// The issue's goal.
    pub goal: Option<Goal>,
}

impl Case {
    /// A header-only case at 64 bytes, scale 1, no reference, one output.
    pub fn header(
        element: &'static str,
        config: impl Into<String>,
        what: impl Into<String>,
        frames: impl Fn(usize) -> Vec<Vec<u8>> + 'static,
    ) -> Case {
        Case {
            element,
            config: config.into(),
            what: what.into(),
            reference: None,
            prelude: String::new(),
            outputs: 1,
            sizes: vec![64],
            frames: Box::new(frames),
            per_byte: false,
            scale: 1.0,
            goal: None,
        }
    }
}

/// Every case, in table order. `dir` is a scratch directory for files the
/// configurations read (tables, keys).
pub fn all_cases(dir: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(standard::cases(dir));
    v.extend(parse::cases(dir));
    v.extend(encap::cases(dir));
    v.extend(crypto::cases(dir));
    v.extend(tables_hash::cases(dir));
    v.extend(tables_lpm::cases(dir));
    v.extend(sched::cases(dir));
    v.extend(flow::cases(dir));
    v.extend(flowexport::cases(dir));
    v.extend(scion::cases(dir));
    v
}

/// Options of `linerate bench elements`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Runs per configuration (median taken).
    pub runs: usize,
    /// Packets per run (scaled per case).
    pub packets: u64,
    /// Only cases whose element, configuration or description contains one of these.
    pub filter: Vec<String>,
    /// Write the Markdown table here too.
    pub markdown: Option<PathBuf>,
}

/// One measured row.
#[derive(Debug, Clone)]
pub struct Row {
    /// Element class.
    pub element: String,
    /// Configuration description.
    pub what: String,
    /// Frame size in bytes.
    pub size: usize,
    /// Element cost in ns per packet (median).
    pub ns: f64,
    /// Spread: min and max of the per-run costs, ns per packet.
    pub range: (f64, f64),
    /// Reference cost in ns per packet.
    pub ref_ns: Option<f64>,
    /// Whether throughput is reported in Gbps.
    pub per_byte: bool,
    /// The goal and whether it is met (goals apply to the largest size).
    pub goal: Option<(Goal, bool)>,
    /// The core's clock and issue rate around the row's timed rounds, the
    /// slowest of the probes just before and just after each
    /// ([`linerate_model::CoreSpeed`]): a row with a round kept although the
    /// core ran slow or shared shows it here.
    pub speed: Option<CoreSpeed>,
}

impl Row {
    /// The core's clock and issue rate for the table (`3.69, 13.6`), `-`
    /// where they were not probed.
    fn speed_text(&self) -> String {
        self.speed
            .map_or("-".to_string(), |s| format!("{:.2}, {:.1}", s.ghz, s.adds))
    }

    /// Million packets per second on one core.
    pub fn mpps(&self) -> f64 {
        1e3 / self.ns.max(1e-3)
    }
    /// Gbit/s of frame bytes on one core.
    pub fn gbps(&self) -> f64 {
        self.size as f64 * 8.0 / self.ns.max(1e-3)
    }
}

/// Build and run a configuration in this thread; CPU seconds of the run
/// (the model's runner: `linerate model` times its points the same way).
fn run_text(text: &str) -> Result<f64, String> {
    let reg = linerate_elements::registry();
    linerate_model::calibrate::run_config(&reg, text)
        .map(|r| r.cpu)
        .map_err(|e| format!("{e}\n{text}"))
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) -> Result<(), String> {
    use linerate_io::pcap::{LinkType, PcapWriter};
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut w = PcapWriter::create(path, LinkType::ETHERNET, 65535, true)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for (k, f) in frames.iter().enumerate() {
        w.write(
            1_700_000_000_000_000_000 + k as u64 * 1000,
            f.len() as u32,
            f,
        )
        .map_err(err)?;
    }
    w.flush().map_err(err)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn graph(src: &str, prelude: &str, elem: &str, outputs: usize) -> String {
    let mut s = format!("{prelude}\nsrc :: {src} -> e :: {elem};\n");
    for k in 0..outputs {
        s.push_str(&format!("e[{k}] -> Discard;\n"));
    }
    s
}

/// The most times a round of a row (base, element, reference) is measured
/// again while the core ran slow or shared ([`SpeedGuard`]); then it is
/// kept and counted.
const RETAKES: usize = 3;

/// Measure one case at one size, again while the core ran slow.
fn measure(
    case: &Case,
    size: usize,
    dir: &Path,
    opts: &Options,
    guard: &mut SpeedGuard,
) -> Result<Row, String> {
    let frames = (case.frames)(size);
    let trace = dir.join(format!("{}-{size}.pcap", case.element));
    write_pcap(&trace, &frames)?;
    let n = ((opts.packets as f64 * case.scale) as u64).max(1000);
    let src = format!(
        "MemoryReplay(FILE \"{}\", COPY true, LIMIT {n}, STOP true)",
        trace.display()
    );
    let base = format!("src :: {src} -> Discard;\n");
    let elem = graph(&src, &case.prelude, &case.config, case.outputs);
    let reference = case
        .reference
        .as_ref()
        .map(|r| graph(&src, &case.prelude, r, case.outputs));
    // Warm up caches, page tables and the CPU's clock.
    run_text(&base)?;
    run_text(&elem)?;
    // Each round (base, element, reference) between probes of its own: the
    // core's state changes within seconds, so a probe around a whole row
    // (tens of runs) would miss a spell in its middle.
    let (mut tb, mut te, mut tr) = (Vec::new(), Vec::new(), Vec::new());
    let mut speed: Option<CoreSpeed> = None;
    for _ in 0..opts.runs.max(1) {
        let ((b, e, r), s) = guard.measure(PROBE_STEPS, RETAKES, || {
            let b = run_text(&base)?;
            let e = run_text(&elem)?;
            let r = reference.as_ref().map(|r| run_text(r)).transpose()?;
            Ok::<_, String>((b, e, r))
        })?;
        tb.push(b);
        te.push(e);
        tr.extend(r);
        speed = match (speed, s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    let nf = n as f64;
    let b = median(tb.clone());
    let per = |t: f64| ((t - b) / nf * 1e9).max(0.0);
    let costs: Vec<f64> = te.iter().map(|&t| per(t)).collect();
    let ns = per(median(te));
    let ref_ns = (!tr.is_empty()).then(|| per(median(tr)));
    let mut row = Row {
        element: case.element.to_string(),
        what: case.what.clone(),
        size,
        ns,
        range: (
            costs.iter().copied().fold(f64::INFINITY, f64::min),
            costs.iter().copied().fold(0.0, f64::max),
        ),
        ref_ns,
        per_byte: case.per_byte,
        goal: None,
        speed,
    };
    if size == *case.sizes.iter().max().unwrap_or(&size) {
        row.goal = case.goal.map(|g| {
            let met = match g {
                Goal::Mpps(x) => row.mpps() >= x,
                Goal::Gbps(x) => row.gbps() >= x,
            };
            (g, met)
        });
    }
    Ok(row)
}

/// The table in Markdown.
fn markdown(rows: &[Row], machine: &Machine) -> String {
    let mut s = String::from(
        "| element | configuration | bytes | ns/packet (min-max) | Mpps | Gbps | reference ns | speed-up | goal | core GHz, adds/ns |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---|---:|\n",
    );
    for r in rows {
        let gbps = if r.per_byte {
            format!("{:.1}", r.gbps())
        } else {
            "-".into()
        };
        let (rn, su) = match r.ref_ns {
            Some(x) => (format!("{x:.2}"), format!("{:.1}x", x / r.ns.max(1e-3))),
            None => ("-".into(), "-".into()),
        };
        let goal = match r.goal {
            Some((Goal::Mpps(x), met)) => {
                format!("≥ {x} Mpps: {}", if met { "met" } else { "NOT met" })
            }
            Some((Goal::Gbps(x), met)) => {
                format!("≥ {x} Gbps: {}", if met { "met" } else { "NOT met" })
            }
            None => String::new(),
        };
        // Below 0.1 ns the difference is within the noise of the base.
        let mpps = if r.ns < 0.1 {
            "(below resolution)".to_string()
        } else {
            format!("{:.1}", r.mpps())
        };
        s.push_str(&format!(
            "| {} | {} | {} | {:.2} ({:.2}-{:.2}) | {} | {} | {} | {} | {} | {} |\n",
            r.element,
            r.what,
            r.size,
            r.ns,
            r.range.0,
            r.range.1,
            mpps,
            gbps,
            rn,
            su,
            goal,
            r.speed_text()
        ));
    }
    s.push_str(&format!("\nmachine: {}\n", machine.summary()));
    s
}

/// Run the table, printing rows as they finish; the Markdown table with a
/// line on the machine (CPU, kernel, load before and after) comes back.
pub fn run(opts: &Options) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("linerate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = run_in(&dir, opts);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(dir: &Path, opts: &Options) -> Result<String, String> {
    let mut machine = Machine::current();
    let cases: Vec<Case> = all_cases(dir)
        .into_iter()
        .filter(|c| {
            opts.filter.is_empty()
                || opts.filter.iter().any(|f| {
                    [c.element, &c.config, &c.what]
                        .iter()
                        .any(|s| s.contains(f.as_str()))
                })
        })
        .collect();
    if cases.is_empty() {
        return Err("no benchmark case matches the filter".into());
    }
    let mut rows = Vec::new();
    let mut guard = SpeedGuard::new(machine.start_speed());
    for c in &cases {
        for &size in &c.sizes {
            let r = measure(c, size, dir, opts, &mut guard)?;
            eprintln!(
                "{:<14} {:<40} {:>5} B {:>8.2} ns/packet {:>8.1} Mpps  (core GHz, adds/ns: {})",
                r.element,
                r.what,
                r.size,
                r.ns,
                r.mpps(),
                r.speed_text()
            );
            rows.push(r);
        }
    }
    machine.end();
    let mut md = markdown(&rows, &machine);
    md.push_str(&format!(
        "rounds measured again while the core read below {:.0} % of its fastest probe ({}): {}; kept slow after {RETAKES} retakes: {}\n",
        linerate_model::SLOW_SHARE * 100.0,
        guard.fastest.map_or("-".to_string(), |f| f.text()),
        guard.retaken,
        guard.kept_slow
    ));
    if let Some(p) = &opts.markdown {
        std::fs::write(p, &md).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(md)
}
