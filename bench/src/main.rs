//! `linerate-bench`: the benchmarks behind docs/performance.md.
//!
//! `linerate-bench ip [--runs N] [--traces DIR] [--quick] [--keep-cache]`
//! runs issue 3's pipelines of Click's IP elements (AggregateIPFlows;
//! IPFilter with 1,000 and 8,000 generated rules, with and without its
//! decision cache; DecIPTTL, SetIPChecksum and ToDump to a memory-backed
//! file system). It always drops the traces from the page cache first (see
//! `--evict` below), so that its figures do not depend on whether
//! `gentrace` has just written the trace; `--keep-cache` measures the page
//! cache as it is instead. In that state `pcap_floor` (the issue's "merely
//! streaming the trace", 0.31-0.37 s there) measured 0.29-0.37 s on this
//! machine (2026-11-22), the figure the goals were set against.
//!
//! `linerate-bench core [--runs N] [--traces DIR] [--quick] [--evict]` runs
//! the core framework benchmark of issue 2: each case is a separate
//! `linerate` process (start-up included), timed from spawn to exit. After
//! one warm-up round, N rounds (default 5) run every case once, in turn, so
//! that a change in the machine's load or page-cache state during the
//! benchmark reaches every case alike; the table reports the median, min
//! and max, and ratios between cases are also taken round by round. The
//! traces are generated with `gentrace` on first use and kept in DIR
//! (default `bench/traces`, ignored by git). Run it through
//! `bench/run-core.sh`, which builds the release binaries first.
//!
//! The cost of the page faults on a memory-mapped trace depends on how the
//! file came into the page cache: read from disk through a mapping, it is
//! held in large folios that a fault maps 2 MiB at a time; written by
//! `gentrace` or brought back after memory pressure, in small ones that a
//! fault maps 64 KiB at a time (on 20M records, about 0.01 s of kernel time
//! against 0.4 s). `--evict` drops the traces from the page cache first, so
//! that the warm-up round reads them from disk through the mapping: the
//! first state, reproducibly.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

struct Case {
    name: String,
    packets: u64,
    cmd: Vec<String>,
}

fn bin_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target/release"))
}

fn run_once(cmd: &[String]) -> f64 {
    let t = Instant::now();
    let st = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let el = t.elapsed().as_secs_f64();
    match st {
        Ok(s) if s.success() => el,
        Ok(s) => panic!("{:?} failed: {s}", cmd),
        Err(e) => panic!("{:?}: {e}", cmd),
    }
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let med = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (med, v[0], v[v.len() - 1])
}

fn ensure_trace(dir: &Path, kind: &str, file: &str) -> PathBuf {
    let p = dir.join(file);
    if !p.exists() {
        std::fs::create_dir_all(dir).expect("create trace dir");
        eprintln!("generating {} ...", p.display());
        let st = Command::new(bin_dir().join("gentrace"))
            .arg(kind)
            .arg(&p)
            .status()
            .expect("run gentrace");
        assert!(st.success(), "gentrace {kind} failed");
    }
    p
}

fn lr(expr: &str, extra: &[&str]) -> Vec<String> {
    let mut v = vec![
        bin_dir().join("linerate").display().to_string(),
        "run".into(),
        "--no-summary".into(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v.push("-e".into());
    v.push(expr.into());
    v
}

fn chain(n: usize) -> String {
    "-> Null ".repeat(n)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let suite = args.first().cloned().unwrap_or_default();
    if suite != "core" && suite != "ip" {
        eprintln!("usage: linerate-bench core|ip [--runs N] [--traces DIR] [--quick] [--evict] [--keep-cache]");
        std::process::exit(2);
    }
    let mut runs = 5;
    let mut traces = PathBuf::from("bench/traces");
    let mut quick = false;
    let mut evict = false;
    let mut keep_cache = false;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--runs" => {
                i += 1;
                runs = args[i].parse().expect("--runs N");
            }
            "--traces" => {
                i += 1;
                traces = PathBuf::from(&args[i]);
            }
            "--quick" => quick = true,
            "--evict" => evict = true,
            "--keep-cache" => keep_cache = true,
            o => panic!("unknown option {o}"),
        }
        i += 1;
    }
    let big = if quick {
        ensure_trace(&traces, "small", "small-2m.pcap")
    } else {
        ensure_trace(&traces, "small20m", "small-20m.pcap")
    };
    let big_n: u64 = if quick { 2_000_000 } else { 20_000_000 };
    if evict || (suite == "ip" && !keep_cache) {
        for f in std::fs::read_dir(&traces).expect("trace dir").flatten() {
            evict_from_page_cache(&f.path());
        }
    }
    if suite == "ip" {
        return suite_ip(&big, big_n, &traces, runs);
    }
    let large = ensure_trace(&traces, "large", "large-500k.pcap");
    let b = big.display().to_string();
    let l = large.display().to_string();
    let gen_n: u64 = if quick { 20_000_000 } else { 100_000_000 };
    let cases = vec![
        Case { name: format!("pcap_floor (mmap, touch each record) {}", big.file_name().unwrap().to_string_lossy()), packets: big_n, cmd: vec![bin_dir().join("pcap_floor").display().to_string(), b.clone()] },
        Case { name: "FromDump(T, STOP true) -> Discard".into(), packets: big_n, cmd: lr(&format!("FromDump({b}, STOP true) -> Discard"), &[]) },
        Case { name: "FromDump(1500 B trace) -> Discard".into(), packets: 500_000, cmd: lr(&format!("FromDump({l}, STOP true) -> Discard"), &[]) },
        Case { name: format!("InfiniteSource(LENGTH 64, LIMIT {gen_n}) -> Discard"), packets: gen_n, cmd: lr(&format!("InfiniteSource(LENGTH 64, LIMIT {gen_n}, STOP true) -> Discard"), &[]) },
        Case { name: "InfiniteSource(TIMESTAMP false) -> Null x1 -> Discard".into(), packets: gen_n, cmd: lr(&format!("InfiniteSource(LENGTH 64, LIMIT {gen_n}, STOP true, TIMESTAMP false) {}-> Discard", chain(1)), &[]) },
        Case { name: "InfiniteSource(TIMESTAMP false) -> Null x10 -> Discard".into(), packets: gen_n, cmd: lr(&format!("InfiniteSource(LENGTH 64, LIMIT {gen_n}, STOP true, TIMESTAMP false) {}-> Discard", chain(10)), &[]) },
        Case { name: "per-packet workload, 1 thread".into(), packets: gen_n / 2, cmd: lr(&format!("InfiniteSource(LENGTH 64, LIMIT {}, STOP true) -> Counter -> Counter -> Counter -> Counter -> Discard", gen_n / 2), &[]) },
        Case { name: "per-packet workload, 2 threads replicated".into(), packets: gen_n / 2, cmd: lr(&format!("InfiniteSource(LENGTH 64, LIMIT {}, STOP true) -> Counter -> Counter -> Counter -> Counter -> Discard", gen_n / 2), &["--threads", "2", "--replicate"]) },
    ];
    let (medians, times) = measure(&cases, runs, &|| ());
    println!();
    let paired: Vec<f64> = times[0]
        .iter()
        .zip(&times[1])
        .map(|(f, d)| f / d * 100.0)
        .collect();
    let (med, min, max) = stats(paired);
    println!(
        "FromDump vs floor: {:.1} % of the floor's rate (medians); round by round: median {med:.1} %, min {min:.1} %, max {max:.1} %",
        medians[1] / medians[0] * 100.0
    );
    let per_elem_ns = (1e3 / medians[5] - 1e3 / medians[4]) / 9.0;
    println!("per-element cost (10 Nulls - 1 Null) / 9: {per_elem_ns:.2} ns/packet");
    println!(
        "replicated speed-up, 2 threads: {:.2}x",
        medians[7] / medians[6]
    );
}

/// Run one warm-up round, then `runs` rounds of every case in turn; print
/// the table and return the median rates in Mpps and each case's times (in
/// round order). `reset` runs before every run, untimed.
fn measure(cases: &[Case], runs: usize, reset: &dyn Fn()) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut machine = linerate_model::Machine::current();
    for c in cases {
        reset();
        run_once(&c.cmd); // warm the page cache and the binary
    }
    let mut times = vec![Vec::new(); cases.len()];
    for _ in 0..runs {
        for (c, t) in cases.iter().zip(&mut times) {
            reset();
            t.push(run_once(&c.cmd));
        }
    }
    println!("| case | packets | median s | min s | max s | median Mpps |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut medians = Vec::new();
    for (c, t) in cases.iter().zip(&times) {
        let (med, min, max) = stats(t.clone());
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.1} |",
            c.name,
            c.packets,
            med,
            min,
            max,
            c.packets as f64 / med / 1e6
        );
        medians.push(c.packets as f64 / med / 1e6);
    }
    machine.end();
    println!("\nmachine: {}", machine.summary());
    (medians, times)
}

/// Drop `path`'s pages from the page cache (clean pages only; a hint the
/// kernel may ignore in part).
fn evict_from_page_cache(path: &Path) {
    use std::os::fd::AsRawFd;
    if let Ok(f) = std::fs::File::open(path) {
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            eprintln!("{}: posix_fadvise: error {rc}", path.display());
        }
    }
}

/// Issue 3's pipelines of Click's IP elements.
fn suite_ip(big: &Path, big_n: u64, traces: &Path, runs: usize) {
    let small = ensure_trace(traces, "small", "small-2m.pcap");
    let (b, s) = (big.display().to_string(), small.display().to_string());
    let shm = if Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    let out = format!("{shm}/linerate-bench-out.pcap");
    let mut cases = vec![
        Case { name: "FromDump(T) -> Discard (reference)".into(), packets: big_n, cmd: lr(&format!("FromDump({b}, STOP true) -> Discard"), &[]) },
        Case {
            name: "FromDump(T) -> Strip(14) -> CheckIPHeader -> AggregateIPFlows -> Discard".into(),
            packets: big_n,
            cmd: lr(&format!("FromDump({b}, STOP true) -> Strip(14) -> CheckIPHeader -> AggregateIPFlows -> Discard"), &[]),
        },
    ];
    // IPFilter with the generated rule sets (see `classrules`): written to
    // configuration files next to the traces (8,000 rules are longer than
    // one command-line argument may be). The last case turns the decision
    // cache off (`cache_size` 0, written by a Script before the first
    // packet), so the tree alone is measured too.
    let (flows, _) = linerate_bench::classrules::trace(0);
    for (n, cache) in [(1000, true), (8000, true), (1000, false)] {
        let rules = linerate_bench::classrules::rules(n, &flows).join(",\n  ");
        let script = if cache {
            ""
        } else {
            "Script(write f.cache_size 0);\n"
        };
        let file = traces.join(format!(
            "ipfilter-{n}{}.click",
            if cache { "" } else { "-nocache" }
        ));
        std::fs::write(
            &file,
            format!("{script}FromDump({b}, STOP true) -> Strip(14) -> CheckIPHeader\n-> f :: IPFilter({rules})\n-> Discard;\n"),
        )
        .expect("write the IPFilter configuration");
        let cmd = vec![
            bin_dir().join("linerate").display().to_string(),
            "run".into(),
            "--no-summary".into(),
            file.display().to_string(),
        ];
        cases.push(Case {
            name: format!(
                "FromDump(T) -> Strip(14) -> CheckIPHeader -> IPFilter({n} rules{}) -> Discard",
                if cache { "" } else { ", cache off" }
            ),
            packets: big_n,
            cmd,
        });
    }
    cases.push(
        Case {
            name: format!("FromDump(2M) -> Strip(14) -> CheckIPHeader -> DecIPTTL -> SetIPChecksum -> Unstrip(14) -> ToDump({shm})"),
            packets: 2_000_000,
            cmd: lr(&format!("FromDump({s}, STOP true) -> Strip(14) -> CheckIPHeader -> DecIPTTL -> SetIPChecksum -> Unstrip(14) -> ToDump({out})"), &[]),
        },
    );
    // ToDump writes a new file each run, as a user's run would: without
    // this, opening the previous run's 160 MB output truncates it inside
    // the timed run (about 40 kernel cycles a packet, session 8).
    measure(&cases, runs, &|| {
        let _ = std::fs::remove_file(&out);
    });
    let _ = std::fs::remove_file(&out);
}
