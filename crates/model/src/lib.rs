//! linerate's performance model (issue 5).
//!
//! The time one core spends on a packet is modelled as `T = C + P·p + H·h`:
//! `C` a constant per-packet cost (receive, hand through the graph, send or
//! free), `P` a cost per byte of packet length `p`, `H` the cost of one
//! parse-and-lookup step and `h` the number of steps. [`calibrate`] measures
//! a test network function over a grid of `(p, h)` through a real linerate
//! I/O path and [`fit`] estimates C, P and H with confidence intervals;
//! [`predict`] turns a model into cores needed for a line rate using
//! Ethernet's per-frame overhead ([`ether`]); [`plot`] draws the results.
//! The method is described in `docs/model.md`.

pub mod calibrate;
pub mod ether;
pub mod fit;
pub mod plot;
pub mod stats;

use ether::Mix;
use fit::{Fit, Param};
use serde::{Deserialize, Serialize};

/// The format tag written into model files.
pub const FORMAT: &str = "linerate-model/1";

/// The whitepaper's parameters (DPDK on a Xeon E5-2687W v4, 100G FPGA NIC).
pub const WHITEPAPER: (f64, f64, f64) = (38.6, 0.101, 4.07);

/// One measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Packet length in bytes as the software sees it (frame without FCS).
    pub p: u64,
    /// Parse-and-lookup steps.
    pub h: u32,
    /// Repetition number (0-based).
    pub rep: usize,
    /// Packets sent through the configuration.
    pub packets: u64,
    /// Wall-clock seconds the run took (monotonic clock around `Router::run`).
    pub seconds: f64,
    /// CPU seconds the running thread spent in the run (its
    /// `CLOCK_THREAD_CPUTIME_ID`: time it was not descheduled).
    pub cpu_seconds: f64,
    /// Nanoseconds per packet on the model's clock: `seconds / packets` or
    /// `cpu_seconds / packets`.
    pub ns_per_packet: f64,
    /// The core's speed around the run, GHz: the slower of the probes
    /// ([`core_speed`]) just before and just after it.
    #[serde(default)]
    pub core_ghz: Option<f64>,
    /// The core's issue rate around the run, independent additions a
    /// nanosecond: the slower of the probes ([`core_issue`]) just before and
    /// just after it.
    #[serde(default)]
    pub core_adds: Option<f64>,
}

/// How noisy the measurements were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// Median over grid points of the coefficient of variation (sd/mean)
    /// of the repeated runs.
    pub median_cv: f64,
    /// Largest coefficient of variation.
    pub max_cv: f64,
    /// The grid point (p, h) with the largest one.
    pub max_cv_at: (u64, u32),
}

/// The machine a model was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// CPUs available to the process.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// 1, 5 and 15-minute load averages before the calibration.
    pub load_before: Option<[f64; 3]>,
    /// The same after it.
    pub load_after: Option<[f64; 3]>,
    /// The core's speed before the measurement ([`core_speed_ghz`]).
    #[serde(default)]
    pub speed_before: Option<f64>,
    /// The same after it.
    #[serde(default)]
    pub speed_after: Option<f64>,
    /// The core's issue rate before the measurement ([`core_issue`]).
    #[serde(default)]
    pub adds_before: Option<f64>,
    /// The same after it.
    #[serde(default)]
    pub adds_after: Option<f64>,
}

impl Machine {
    /// Describe the machine this process runs on.
    pub fn current() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        Machine {
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            load_before: loadavg(),
            load_after: None,
            speed_before: core_speed_ghz(),
            speed_after: None,
            adds_before: core_issue(PROBE_STEPS),
            adds_after: None,
        }
    }

    /// The probes taken before the measurement, as a [`SpeedGuard`]'s start.
    pub fn start_speed(&self) -> Option<CoreSpeed> {
        Some(CoreSpeed {
            ghz: self.speed_before?,
            adds: self.adds_before?,
        })
    }

    /// Record the load average and the core's speed and issue rate at the end of a
    /// measurement.
    pub fn end(&mut self) {
        self.load_after = loadavg();
        self.speed_after = core_speed_ghz();
        self.adds_after = core_issue(PROBE_STEPS);
    }

    /// One line for a report: `CPU, N CPUs, kernel K, load average A before, B after,
    /// core X GHz before, Y after, U adds/ns before, V after` (1-minute
    /// averages; `-` where the system does not report them or the probe does
    /// not run).
    pub fn summary(&self) -> String {
        let load = |l: Option<[f64; 3]>| l.map_or("-".to_string(), |l| format!("{:.2}", l[0]));
        let speed = |g: Option<f64>| g.map_or("-".to_string(), |g| format!("{g:.2}"));
        let adds = |g: Option<f64>| g.map_or("-".to_string(), |g| format!("{g:.1}"));
        format!(
            "{}, {} CPUs, kernel {}, load average {} before, {} after, core {} GHz before, {} after, {} adds/ns before, {} after",
            self.cpu,
            self.cpus,
            self.kernel,
            load(self.load_before),
            load(self.load_after),
            speed(self.speed_before),
            speed(self.speed_after),
            adds(self.adds_before),
            adds(self.adds_after)
        )
    }
}

/// How fast this thread's core runs now, in additions a nanosecond: a chain of
/// dependent 64-bit additions (one a cycle on any out-of-order x86-64 core)
/// timed on the wall clock, the fastest of three 10-million-step chains (about
/// 3 ms each at 3 GHz). It reads the clock the core actually ran at, and less
/// where the thread lost the core: on a shared virtual machine the same vCPU
/// measured 3.7 and 1.9 within a minute (session 19), and every timing taken
/// meanwhile moves with it, so reports print it next to the load average. It
/// does not see another thread on the same physical core (an SMT sibling,
/// on a shared host another tenant's vCPU): a dependent chain runs at one
/// addition a cycle either way. [`core_issue`] does. `None` off x86-64.
pub fn core_speed_ghz() -> Option<f64> {
    core_speed(10_000_000)
}

/// A measurement is taken again while the core's speed probe or its issue
/// probe, just before or just after it, read below this share of the
/// fastest such probe so far: on a shared host the core slows to about half
/// for seconds at a time, or another tenant's thread takes a third of its
/// execution units, and every time taken meanwhile moves with it.
pub const SLOW_SHARE: f64 = 0.9;

/// Additions in each chain of [`Machine`]'s issue probes (a few ms).
const PROBE_STEPS: u32 = 10_000_000;

/// What the two core probes read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreSpeed {
    /// Dependent additions a nanosecond ([`core_speed`]): the core's clock.
    pub ghz: f64,
    /// Independent additions a nanosecond ([`core_issue`]): the clock times
    /// the additions a cycle this thread's share of the core issues.
    pub adds: f64,
}

impl CoreSpeed {
    /// Both probes with chains of `steps` additions; `None` off x86-64.
    pub fn probe(steps: u32) -> Option<CoreSpeed> {
        Some(CoreSpeed {
            ghz: core_speed(steps)?,
            adds: core_issue(steps)?,
        })
    }

    /// The slower of two readings, probe by probe.
    pub fn min(self, other: CoreSpeed) -> CoreSpeed {
        CoreSpeed {
            ghz: self.ghz.min(other.ghz),
            adds: self.adds.min(other.adds),
        }
    }

    /// The faster of two readings, probe by probe.
    pub fn max(self, other: CoreSpeed) -> CoreSpeed {
        CoreSpeed {
            ghz: self.ghz.max(other.ghz),
            adds: self.adds.max(other.adds),
        }
    }

    /// True if either probe read below [`SLOW_SHARE`] of `fastest`'s.
    pub fn slower_than(self, fastest: CoreSpeed) -> bool {
        self.ghz < SLOW_SHARE * fastest.ghz || self.adds < SLOW_SHARE * fastest.adds
    }

    /// `3.69 GHz, 13.6 adds/ns`.
    pub fn text(self) -> String {
        format!("{:.2} GHz, {:.1} adds/ns", self.ghz, self.adds)
    }
}

/// Measurements taken while the core kept its speed and issue rate:
/// [`SpeedGuard::measure`] probes the core ([`CoreSpeed::probe`]) before
/// and after a measurement and takes it again while either probe read
/// below [`SLOW_SHARE`] of the fastest such probe it has seen, counting
/// retakes and measurements kept slow.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpeedGuard {
    /// The fastest probes so far (each on its own), if any.
    pub fastest: Option<CoreSpeed>,
    /// Measurements taken again.
    pub retaken: usize,
    /// Measurements kept although the core still ran slow.
    pub kept_slow: usize,
}

impl SpeedGuard {
    /// A guard whose fastest probes so far are `start` (a [`Machine`]'s
    /// [`start_speed`](Machine::start_speed), say).
    pub fn new(start: Option<CoreSpeed>) -> SpeedGuard {
        SpeedGuard {
            fastest: start,
            ..SpeedGuard::default()
        }
    }

    /// `take()`, taken again up to `retakes` times while the core ran slow
    /// around it (probes of `steps` additions); its result and the slower
    /// of the two probes around the kept one.
    pub fn measure<T, E>(
        &mut self,
        steps: u32,
        retakes: usize,
        mut take: impl FnMut() -> Result<T, E>,
    ) -> Result<(T, Option<CoreSpeed>), E> {
        let mut tries = 0;
        loop {
            let before = CoreSpeed::probe(steps);
            let t = take()?;
            let after = CoreSpeed::probe(steps);
            let speed = before.zip(after).map(|(a, b)| a.min(b));
            for s in [before, after].into_iter().flatten() {
                self.fastest = Some(self.fastest.map_or(s, |f| f.max(s)));
            }
            let slow = speed
                .zip(self.fastest)
                .is_some_and(|(s, f)| s.slower_than(f));
            if !slow || tries == retakes {
                self.kept_slow += usize::from(slow);
                return Ok((t, speed));
            }
            tries += 1;
            self.retaken += 1;
        }
    }
}

/// [`core_speed_ghz`] with chains of `steps` additions (a million take about
/// 0.3 ms at 3 GHz: short enough to probe before and after every run of a
/// calibration).
pub fn core_speed(steps: u32) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        // The loop is in the assembly, four additions a turn, so that the
        // chain is the same in a debug build as in a release build (the
        // counter's decrement and branch run beside it).
        let turns = u64::from(steps / 4).max(1);
        Some(additions_per_ns(4 * turns, || {
            let mut x = 0u64;
            // SAFETY: registers only (two, both declared); no memory, no stack.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "add {x}, 1",
                    "add {x}, 1",
                    "add {x}, 1",
                    "add {x}, 1",
                    "sub {n}, 1",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) turns => _,
                    options(nomem, nostack)
                )
            };
            std::hint::black_box(x);
        }))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = steps;
        None
    }
}

/// How many additions a nanosecond this thread's share of the core issues:
/// four independent chains of `steps / 4` additions each, interleaved (up
/// to one a cycle on each integer ALU; about 3.7 a cycle on a Zen 4 core
/// alone), timed on the wall clock, the fastest of three. It falls with the
/// clock, as [`core_speed`] does, and also while another thread runs on the
/// same physical core: on session 20's AMD EPYC guest the SMT sibling (a
/// vCPU of another tenant) was busy in about four probes of five, and this
/// probe read 6.9-10.4 instead of 13.6 with [`core_speed`] at its full 3.69
/// GHz; timings that depend on the core's width (a parser, a hash, a copy,
/// L1 and L2, which the siblings share) moved with it, up to twofold.
/// `None` off x86-64.
pub fn core_issue(steps: u32) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        // Twelve additions a turn, three on each of four registers, and the
        // counter's decrement and branch.
        let turns = u64::from(steps / 12).max(1);
        Some(additions_per_ns(12 * turns, || {
            let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
            // SAFETY: registers only (five, all declared); no memory, no stack.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "add {a}, 1",
                    "add {b}, 1",
                    "add {c}, 1",
                    "add {d}, 1",
                    "add {a}, 1",
                    "add {b}, 1",
                    "add {c}, 1",
                    "add {d}, 1",
                    "add {a}, 1",
                    "add {b}, 1",
                    "add {c}, 1",
                    "add {d}, 1",
                    "sub {n}, 1",
                    "jnz 2b",
                    a = inout(reg) a,
                    b = inout(reg) b,
                    c = inout(reg) c,
                    d = inout(reg) d,
                    n = inout(reg) turns => _,
                    options(nomem, nostack)
                )
            };
            std::hint::black_box((a, b, c, d));
        }))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = steps;
        None
    }
}

/// `additions` over the nanoseconds `chain` takes on the wall clock, the
/// fastest of three runs: what the core probes report.
#[cfg(target_arch = "x86_64")]
fn additions_per_ns(additions: u64, mut chain: impl FnMut()) -> f64 {
    let mut best = 0f64;
    for _ in 0..3 {
        let t = std::time::Instant::now();
        chain();
        let ns = t.elapsed().as_secs_f64() * 1e9;
        best = best.max(additions as f64 / ns.max(1.0));
    }
    best
}

/// The 1, 5 and 15-minute load averages, where the system reports them.
pub fn loadavg() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|w| w.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// A calibrated model: what `linerate model calibrate` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// [`FORMAT`].
    pub format: String,
    /// The I/O path measured (`memory`, `pcap`).
    pub io: String,
    /// The clock the fit uses: `cpu` (thread CPU time) or `wall`.
    pub clock: String,
    /// How runs enter the fit: `min` (fastest run per grid point) or `all`.
    pub estimator: String,
    /// Seconds since the UNIX epoch when the calibration ended.
    pub created_unix: u64,
    /// The command line.
    pub command: String,
    /// The machine.
    pub machine: Machine,
    /// Packet lengths of the grid.
    pub lengths: Vec<u64>,
    /// Step counts of the grid.
    pub steps: Vec<u32>,
    /// Runs per grid point.
    pub repeats: usize,
    /// Wall-clock seconds the calibration took.
    pub duration_s: f64,
    /// The fitted parameters.
    pub fit: Fit,
    /// The same fit on the other clock, for comparison.
    pub other_clock_fit: Option<Fit>,
    /// Run-to-run noise.
    pub noise: Noise,
    /// Runs measured again because the core ran slow around them (below
    /// [`SLOW_SHARE`] of the fastest probe): not in `points`.
    #[serde(default)]
    pub retaken: usize,
    /// Runs kept although the core still ran slow after the last retake.
    #[serde(default)]
    pub kept_slow: usize,
    /// Every run.
    pub points: Vec<Point>,
}

impl Model {
    /// Read a model file.
    pub fn load(path: &std::path::Path) -> Result<Model, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let m: Model =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if m.format != FORMAT {
            return Err(format!(
                "{}: not a {FORMAT} file (format '{}')",
                path.display(),
                m.format
            ));
        }
        Ok(m)
    }

    /// The model as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a model serialises");
        s.push('\n');
        s
    }

    /// Every run as CSV, with the model's prediction and relative residual.
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "p,frame_size,h,repeat,packets,seconds,cpu_seconds,ns_per_packet,model_ns,relative_residual,core_ghz,core_adds\n",
        );
        for pt in &self.points {
            let y = self.fit.predict(pt.p as f64, f64::from(pt.h));
            s.push_str(&format!(
                "{},{},{},{},{},{:.6},{:.6},{:.4},{:.4},{:.5},{},{}\n",
                pt.p,
                pt.p + ether::FCS,
                pt.h,
                pt.rep,
                pt.packets,
                pt.seconds,
                pt.cpu_seconds,
                pt.ns_per_packet,
                y,
                (pt.ns_per_packet - y) / y,
                pt.core_ghz.map_or(String::new(), |g| format!("{g:.3}")),
                pt.core_adds.map_or(String::new(), |g| format!("{g:.2}"))
            ));
        }
        s
    }
}

/// A fit holding the whitepaper's C, P and H (no uncertainty).
pub fn whitepaper_fit() -> Fit {
    let param = |v: f64| Param {
        value: v,
        se: 0.0,
        ci_low: v,
        ci_high: v,
    };
    Fit {
        c: param(WHITEPAPER.0),
        p: param(WHITEPAPER.1),
        h: param(WHITEPAPER.2),
        cov: [[0.0; 3]; 3],
        n: 0,
        dof: 0,
        r2: f64::NAN,
        r2_weighted: f64::NAN,
        sigma_rel: 0.0,
        max_rel_residual: 0.0,
        above_3pct: 0,
        worst: vec![],
    }
}

/// How many cores a line rate needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Line rate, bit/s.
    pub rate_bps: f64,
    /// The traffic: a frame size or a mix name.
    pub traffic: String,
    /// Mean frame size (FCS included).
    pub mean_frame: f64,
    /// Mean packet length the software sees (`frame − 4`).
    pub mean_p: f64,
    /// Steps per packet.
    pub steps: f64,
    /// Frames per second at line rate, in millions.
    pub mpps: f64,
    /// Nanoseconds between frames at line rate.
    pub budget_ns: f64,
    /// Model time per packet (ns).
    pub t_ns: f64,
    /// Cores needed: `t_ns / budget_ns`.
    pub cores: f64,
    /// 95 % confidence interval of `cores` from the parameters' covariance.
    pub cores_ci: (f64, f64),
}

/// Predict the cores `fit` needs at `rate_bps` for traffic `mix` with
/// `steps` steps per packet. Because the model is linear in `p`, the mean
/// time over a mix is the time at the mix's mean packet length.
pub fn predict(fit: &Fit, rate_bps: f64, mix: &Mix, steps: f64) -> Prediction {
    let p = mix.mean_packet_len();
    let fps = mix.frames_per_second(rate_bps);
    let budget_ns = 1e9 / fps;
    let t = fit.predict(p, steps);
    let half = if fit.dof > 0 {
        stats::t_quantile(0.975, fit.dof as f64) * fit.predict_se(p, steps)
    } else {
        0.0
    };
    Prediction {
        rate_bps,
        traffic: mix.name.clone(),
        mean_frame: mix.mean_size(),
        mean_p: p,
        steps,
        mpps: fps / 1e6,
        budget_ns,
        t_ns: t,
        cores: t / budget_ns,
        cores_ci: ((t - half) / budget_ns, (t + half) / budget_ns),
    }
}

/// Compare two models' C, P and H: (name, a, b, (b − a)/a).
pub fn compare(a: &Fit, b: &Fit) -> Vec<(&'static str, f64, f64, f64)> {
    [
        ("C", a.c.value, b.c.value),
        ("P", a.p.value, b.p.value),
        ("H", a.h.value, b.h.value),
    ]
    .into_iter()
    .map(|(n, x, y)| (n, x, y, (y - x) / x))
    .collect()
}
