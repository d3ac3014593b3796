//! The calibration runner: builds the test network function for each grid
//! point, runs it in-process, and times it.
//!
//! The test network function is
//!
//! ```click
//! src :: SOURCE -> ps :: ParseSteps(h) -> VLANEncap(VLAN_ID 100) -> sink :: SINK;
//! ```
//!
//! with, for the `memory` I/O path, `MemoryReplay(LENGTH p, PACKETS 1024,
//! COPY true, LIMIT n, STOP true)` and `Discard`, and for the `pcap` path
//! `FromDump(FILE, STOP true)` on a trace of 1,024 distinct frames repeated,
//! and `ToDump(/dev/null)`.
//!
//! A run is timed with the monotonic clock around `Router::run`: from the
//! first task run to the source stopping the router. That includes taking
//! packets from the pool and copying each frame into its packet's own
//! buffer, as a NIC's receive DMA fills one (for pcap: reading records from
//! the mapped file as zero-copy views, which VLANEncap's 4-byte push then
//! copies into the packet's own buffer): the per-byte cost; the graph's
//! dispatch, ParseSteps, VLANEncap, and releasing (or writing) the packets.
//! It excludes parsing and building the router and building the frames.
//! Nothing is subtracted.
//!
//! Every run is bracketed by probes of the core ([`crate::CoreSpeed`]: its
//! clock, dependent additions a nanosecond, and its issue rate, independent
//! additions a nanosecond; about 1 ms together). On a shared host the core
//! runs at about half speed for seconds at a time (session 19: 3.7 and
//! 1.9-2.3 GHz within a minute), and another tenant's thread on the same
//! physical core takes a third or more of its width at full clock (session
//! 20); a run around which either probe read below [`crate::SLOW_SHARE`] of
//! its fastest so far is measured again, up to [`RETAKES`] times, and the
//! model counts the retakes and the runs kept slow. Each point records the
//! slower of its two probes of each kind.

use crate::fit::{self, Obs};
use crate::{stats, Machine, Model, Noise, Point, SpeedGuard, FORMAT};
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Registry, Router, RouterOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The most times one run is measured again while the core ran slow
/// ([`SpeedGuard`]: a grid point whose runs all fell in such a spell sits off
/// the plane, and a whole calibration in one moves C, P and H together);
/// after that it is kept and counted ([`Model::kept_slow`]).
pub const RETAKES: usize = 3;

/// Additions in each of the three chains of the probes around every
/// calibration run ([`crate::CoreSpeed::probe`]): about 1 ms at 3 GHz.
const PROBE_STEPS: u32 = 1_000_000;

/// The I/O path a calibration measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// In-memory replay (`MemoryReplay -> ... -> Discard`).
    Memory,
    /// A pcap trace in the page cache (`FromDump -> ... -> ToDump(/dev/null)`).
    Pcap,
}

impl Io {
    /// Parse `memory` or `pcap`.
    pub fn parse(s: &str) -> Result<Io, String> {
        match s {
            "memory" => Ok(Io::Memory),
            "pcap" => Ok(Io::Pcap),
            _ => Err(format!(
                "unknown I/O path '{s}' (expected memory or pcap; AF_PACKET and AF_XDP are not available yet)"
            )),
        }
    }

    /// The name used in model files.
    pub fn name(self) -> &'static str {
        match self {
            Io::Memory => "memory",
            Io::Pcap => "pcap",
        }
    }
}

/// How the repeated runs of a grid point enter the fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimator {
    /// The fastest run of each grid point: the undisturbed cost, since
    /// interference from other processes (preemption, cache and memory
    /// traffic) only ever adds time. One observation per grid point.
    Min,
    /// Every run is an observation.
    All,
}

impl Estimator {
    /// Parse `min` or `all`.
    pub fn parse(s: &str) -> Result<Estimator, String> {
        match s {
            "min" => Ok(Estimator::Min),
            "all" => Ok(Estimator::All),
            _ => Err(format!("unknown estimator '{s}' (expected min or all)")),
        }
    }

    /// The name used in model files.
    pub fn name(self) -> &'static str {
        match self {
            Estimator::Min => "min",
            Estimator::All => "all",
        }
    }

    /// The observations this estimator fits, from every run.
    pub fn select(self, points: &[Point]) -> Vec<Point> {
        match self {
            Estimator::All => points.to_vec(),
            Estimator::Min => {
                let mut best: Vec<Point> = Vec::new();
                for pt in points {
                    match best.iter_mut().find(|b| (b.p, b.h) == (pt.p, pt.h)) {
                        Some(b) if pt.ns_per_packet < b.ns_per_packet => *b = pt.clone(),
                        Some(_) => {}
                        None => best.push(pt.clone()),
                    }
                }
                best
            }
        }
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// I/O path.
    pub io: Io,
    /// The clock the fit uses.
    pub clock: Clock,
    /// Packet lengths `p` (bytes, no FCS).
    pub lengths: Vec<u64>,
    /// Step counts `h`.
    pub steps: Vec<u32>,
    /// Runs per grid point.
    pub repeats: usize,
    /// Target seconds per run (the packet count is chosen from a pilot run).
    pub target_s: f64,
    /// Packets of the pilot run that sizes each point.
    pub pilot_packets: u64,
    /// Most packets in a pcap trace (bounds the trace files).
    pub pcap_max_bytes: u64,
    /// How the runs of a grid point enter the fit.
    pub estimator: Estimator,
    /// Print progress to standard error.
    pub progress: bool,
    /// The command line, recorded in the model.
    pub command: String,
}

impl Options {
    /// The full grid: 6 lengths (64- to 1518-byte frames) × 6 step counts
    /// (0 to 150), 5 runs each of about 0.1 s: under a minute of runs.
    pub fn full(io: Io) -> Options {
        Options {
            io,
            clock: Clock::Cpu,
            lengths: vec![60, 128, 256, 512, 1024, 1514],
            steps: vec![0, 10, 25, 50, 100, 150],
            repeats: 5,
            target_s: 0.1,
            pilot_packets: 20_000,
            pcap_max_bytes: 64 << 20,
            estimator: Estimator::Min,
            progress: false,
            command: String::new(),
        }
    }

    /// A quick grid for tests: 3 lengths × 3 step counts, 2 runs each of
    /// about 20 ms (fitted with every run: the minimum of two leaves too few
    /// observations for honest intervals).
    pub fn quick(io: Io) -> Options {
        Options {
            lengths: vec![60, 512, 1514],
            steps: vec![0, 50, 100],
            repeats: 2,
            target_s: 0.02,
            pilot_packets: 2_000,
            pcap_max_bytes: 4 << 20,
            estimator: Estimator::All,
            ..Options::full(io)
        }
    }
}

/// Which clock times the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The running thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): excludes
    /// time the thread was descheduled, which on a shared machine is most
    /// of the noise.
    Cpu,
    /// Wall-clock time (`Instant`, `CLOCK_MONOTONIC`).
    Wall,
}

impl Clock {
    /// Parse `cpu` or `wall`.
    pub fn parse(s: &str) -> Result<Clock, String> {
        match s {
            "cpu" => Ok(Clock::Cpu),
            "wall" => Ok(Clock::Wall),
            _ => Err(format!("unknown clock '{s}' (expected cpu or wall)")),
        }
    }

    /// The name used in model files.
    pub fn name(self) -> &'static str {
        match self {
            Clock::Cpu => "cpu",
            Clock::Wall => "wall",
        }
    }
}

/// CPU time of the calling thread, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    /// Wall-clock seconds of `Router::run`.
    pub wall: f64,
    /// CPU seconds of the calling thread during `Router::run`.
    pub cpu: f64,
    /// Packets the element `src` sent.
    pub packets: u64,
}

impl Run {
    /// Seconds on `clock`.
    pub fn seconds(&self, clock: Clock) -> f64 {
        match clock {
            Clock::Cpu => self.cpu,
            Clock::Wall => self.wall,
        }
    }
}

/// Build and run a configuration (single-threaded: the router runs in the
/// calling thread); time `Router::run` on both clocks and read the packets
/// the element `src` sent (its `count` handler).
pub fn run_config(reg: &Registry, text: &str) -> Result<Run, String> {
    let opts = ParseOptions {
        vars: vec![],
        catalog: reg,
        clickpath: vec![],
    };
    let config = parse_str(text, "<model>", &opts).map_err(|d| d.to_string())?;
    let mut router =
        Router::build(&config, reg, RouterOptions::default()).map_err(|d| d.to_string())?;
    let c0 = thread_cpu_seconds();
    let t0 = Instant::now();
    router.run();
    let wall = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds() - c0;
    let count = router
        .handle()
        .call("src.count", None)
        .map_err(|e| format!("src.count: {e}"))?;
    let n: u64 = count
        .trim()
        .parse()
        .map_err(|_| format!("src.count: not a number: {count:?}"))?;
    Ok(Run {
        wall,
        cpu,
        packets: n,
    })
}

/// Write a pcap trace of `n` frames of `p` bytes (1,024 distinct frames
/// repeated, the same frames as `MemoryReplay`).
pub fn write_trace(path: &Path, p: u64, n: u64) -> Result<(), String> {
    use linerate_io::pcap::{LinkType, PcapWriter};
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut w = PcapWriter::create(path, LinkType::ETHERNET, 65535, true)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let frames: Vec<Vec<u8>> = (0..1024u32)
        .map(|i| {
            let mut f = vec![0u8; p as usize];
            linerate_elements::model::memoryreplay::build_frame(i, &mut f);
            f
        })
        .collect();
    for k in 0..n {
        let f = &frames[(k % 1024) as usize];
        w.write(1_700_000_000_000_000_000 + k * 1000, f.len() as u32, f)
            .map_err(err)?;
    }
    w.flush().map_err(err)
}

/// The `memory` I/O path's source for packet length `p` and `n` packets:
/// 1,024 distinct frames, each copied into a pool buffer of its own as a
/// NIC's receive DMA fills one (`COPY true`).
fn memory_source(p: u64, n: u64) -> String {
    format!("MemoryReplay(LENGTH {p}, PACKETS 1024, COPY true, LIMIT {n}, STOP true)")
}

/// The test network function's text for packet length `p`, `h` steps and
/// `n` packets; `trace` is the pcap file for the pcap path.
pub fn nf_text(io: Io, p: u64, h: u32, n: u64, trace: Option<&Path>) -> String {
    let (src, sink) = match (io, trace) {
        (Io::Pcap, Some(t)) => (
            format!("FromDump(\"{}\", STOP true)", t.display()),
            "ToDump(/dev/null)".to_string(),
        ),
        _ => (memory_source(p, n), "Discard".to_string()),
    };
    format!("src :: {src} -> ps :: ParseSteps({h}) -> VLANEncap(VLAN_ID 100) -> sink :: {sink};\n")
}

/// A deterministic shuffle (so that slow drifts of the machine spread over
/// the grid instead of lining up with one parameter).
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

/// A scratch directory for trace files, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run the calibration and fit the model.
pub fn calibrate(opts: &Options) -> Result<Model, String> {
    let reg = linerate_elements::registry();
    let start = Instant::now();
    let mut machine = Machine::current();
    let scratch =
        Scratch(std::env::temp_dir().join(format!("linerate-model-{}", std::process::id())));
    // Pcap traces, one per length, bounded in size.
    let mut traces = Vec::new();
    if opts.io == Io::Pcap {
        std::fs::create_dir_all(&scratch.0).map_err(|e| format!("{}: {e}", scratch.0.display()))?;
        for &p in &opts.lengths {
            let n = (opts.pcap_max_bytes / (p + 16)).clamp(10_000, 2_000_000);
            let path = scratch.0.join(format!("p{p}.pcap"));
            write_trace(&path, p, n)?;
            traces.push((p, path));
        }
    }
    let trace_for = |p: u64| traces.iter().find(|t| t.0 == p).map(|t| t.1.as_path());
    // Warm up: pool slabs, page cache, CPU frequency.
    let p0 = opts.lengths[0];
    run_config(
        &reg,
        &nf_text(opts.io, p0, 0, opts.pilot_packets * 5, trace_for(p0)),
    )?;
    // Size every point with a pilot run.
    let mut grid = Vec::new();
    for &p in &opts.lengths {
        for &h in &opts.steps {
            let r = run_config(
                &reg,
                &nf_text(opts.io, p, h, opts.pilot_packets, trace_for(p)),
            )?;
            let per = r.wall / r.packets.max(1) as f64;
            let want = (opts.target_s / per.max(1e-10)) as u64;
            grid.push((p, h, want.clamp(opts.pilot_packets, 200_000_000)));
        }
    }
    let total = grid.len() * opts.repeats;
    let mut points = Vec::with_capacity(total);
    let mut guard = SpeedGuard::new(machine.start_speed());
    for rep in 0..opts.repeats {
        let mut order = grid.clone();
        shuffle(&mut order, 0x9E37_79B9_7F4A_7C15 ^ rep as u64);
        for (p, h, n) in order {
            let text = nf_text(opts.io, p, h, n, trace_for(p));
            let (r, speed) = guard.measure(PROBE_STEPS, RETAKES, || run_config(&reg, &text))?;
            let sent = r.packets;
            if sent == 0 {
                return Err(format!("p = {p}, h = {h}: the source sent no packets"));
            }
            points.push(Point {
                p,
                h,
                rep,
                packets: sent,
                seconds: r.wall,
                cpu_seconds: r.cpu,
                ns_per_packet: r.seconds(opts.clock) * 1e9 / sent as f64,
                core_ghz: speed.map(|s| s.ghz),
                core_adds: speed.map(|s| s.adds),
            });
            if opts.progress {
                eprint!("\rcalibrating: {}/{} runs", points.len(), total);
            }
        }
    }
    if opts.progress {
        eprintln!();
    }
    drop(scratch);
    points.sort_by_key(|pt| (pt.p, pt.h, pt.rep));
    let fit = fit_points(&opts.estimator.select(&points))?;
    let other = match opts.clock {
        Clock::Cpu => Clock::Wall,
        Clock::Wall => Clock::Cpu,
    };
    let other_points: Vec<Point> = points
        .iter()
        .map(|pt| Point {
            ns_per_packet: match other {
                Clock::Cpu => pt.cpu_seconds,
                Clock::Wall => pt.seconds,
            } * 1e9
                / pt.packets as f64,
            ..pt.clone()
        })
        .collect();
    let other_clock_fit = fit_points(&opts.estimator.select(&other_points)).ok();
    machine.end();
    Ok(Model {
        format: FORMAT.into(),
        io: opts.io.name().into(),
        clock: opts.clock.name().into(),
        estimator: opts.estimator.name().into(),
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        command: opts.command.clone(),
        machine,
        lengths: opts.lengths.clone(),
        steps: opts.steps.clone(),
        repeats: opts.repeats,
        duration_s: start.elapsed().as_secs_f64(),
        fit,
        other_clock_fit,
        noise: noise(&points),
        retaken: guard.retaken,
        kept_slow: guard.kept_slow,
        points,
    })
}

/// Fit the model to measured points (relative weights, see [`fit`]).
pub fn fit_points(points: &[Point]) -> Result<fit::Fit, String> {
    let raw: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|pt| (pt.p as f64, f64::from(pt.h), pt.ns_per_packet))
        .collect();
    let w = fit::relative_weights(&raw);
    let obs: Vec<Obs> = raw
        .iter()
        .zip(&w)
        .map(|(&(p, h, t), &w)| Obs { p, h, t, w })
        .collect();
    fit::fit(&obs)
}

/// Coefficients of variation of the repeated runs at each grid point.
pub fn noise(points: &[Point]) -> Noise {
    let mut keys: Vec<(u64, u32)> = points.iter().map(|pt| (pt.p, pt.h)).collect();
    keys.sort_unstable();
    keys.dedup();
    let cvs: Vec<((u64, u32), f64)> = keys
        .iter()
        .map(|&k| {
            let v: Vec<f64> = points
                .iter()
                .filter(|pt| (pt.p, pt.h) == k)
                .map(|pt| pt.ns_per_packet)
                .collect();
            (k, stats::sample_sd(&v) / stats::mean(&v))
        })
        .collect();
    let all: Vec<f64> = cvs.iter().map(|c| c.1).collect();
    let (max_cv_at, max_cv) = cvs
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(((0, 0), 0.0));
    Noise {
        median_cv: stats::median(&all),
        max_cv,
        max_cv_at,
    }
}

/// One packet length of a network function's measurement.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NfPoint {
    /// Frame size (FCS included).
    pub frame: u64,
    /// Packet length the software sees.
    pub p: u64,
    /// Median nanoseconds per packet over the runs.
    pub ns_per_packet: f64,
    /// Every run's nanoseconds per packet.
    pub runs: Vec<f64>,
    /// The equivalent number of steps: (T − C − P·p) / H.
    pub h_equiv: f64,
}

/// The placeholder a configuration measured by `linerate model nf` must use
/// for its packet source.
pub const INPUT: &str = "$INPUT";

/// Measure a network function: `text` must contain [`INPUT`] exactly once,
/// where its packet source goes; it is replaced by the source element
/// (named `src`, as in `src :: MemoryReplay(...)`), for each frame size.
/// Every run is bracketed by the core probes and retaken, as a
/// calibration's are; the returned guard counts the retakes.
pub fn measure_nf(
    text: &str,
    io: Io,
    frames: &[u64],
    fit: &fit::Fit,
    target_s: f64,
    repeats: usize,
    clock: Clock,
) -> Result<(Vec<NfPoint>, SpeedGuard), String> {
    if text.matches(INPUT).count() != 1 {
        return Err(format!(
            "the configuration must use {INPUT} exactly once, where its packet source goes (e.g. '{INPUT} -> CheckIPHeader(14) -> Discard;')"
        ));
    }
    let reg = linerate_elements::registry();
    let scratch =
        Scratch(std::env::temp_dir().join(format!("linerate-model-nf-{}", std::process::id())));
    if io == Io::Pcap {
        std::fs::create_dir_all(&scratch.0).map_err(|e| format!("{}: {e}", scratch.0.display()))?;
    }
    let mut out = Vec::new();
    let mut guard = SpeedGuard::new(crate::CoreSpeed::probe(PROBE_STEPS));
    for &frame in frames {
        let p = crate::ether::packet_len(frame).max(42);
        let src = |n: u64| -> Result<String, String> {
            Ok(match io {
                Io::Memory => format!("src :: {}", memory_source(p, n)),
                Io::Pcap => {
                    let path = scratch.0.join(format!("p{p}-{n}.pcap"));
                    if !path.exists() {
                        write_trace(&path, p, n)?;
                    }
                    format!("src :: FromDump(\"{}\", STOP true)", path.display())
                }
            })
        };
        let pilot = 20_000;
        let r = run_config(&reg, &text.replace(INPUT, &src(pilot)?))?;
        let per = r.wall / r.packets.max(1) as f64;
        let mut want = ((target_s / per.max(1e-10)) as u64).clamp(pilot, 100_000_000);
        if io == Io::Pcap {
            want = want.min((64 << 20) / (p + 16)).max(pilot);
        }
        let timed = text.replace(INPUT, &src(want)?);
        let mut runs = Vec::new();
        for _ in 0..repeats.max(1) {
            let (r, _) = guard.measure(PROBE_STEPS, RETAKES, || run_config(&reg, &timed))?;
            if r.packets == 0 {
                return Err("the source sent no packets".into());
            }
            runs.push(r.seconds(clock) * 1e9 / r.packets as f64);
        }
        let t = stats::median(&runs);
        out.push(NfPoint {
            frame,
            p,
            ns_per_packet: t,
            runs,
            h_equiv: (t - fit.c.value - fit.p.value * p as f64) / fit.h.value,
        });
    }
    Ok((out, guard))
}
