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
        }
    }

    /// Record the load average and the core's speed at the end of a
    /// measurement.
    pub fn end(&mut self) {
        self.load_after = loadavg();
        self.speed_after = core_speed_ghz();
    }

    /// One line for a report: `CPU, N CPUs, kernel K, load average A before, B after,
    /// core X GHz before, Y after` (1-minute averages; `-` where the system does not
    /// report them or the probe does not run).
    pub fn summary(&self) -> String {
        let load = |l: Option<[f64; 3]>| l.map_or("-".to_string(), |l| format!("{:.2}", l[0]));
        let speed = |g: Option<f64>| g.map_or("-".to_string(), |g| format!("{g:.2}"));
        format!(
            "{}, {} CPUs, kernel {}, load average {} before, {} after, core {} GHz before, {} after",
            self.cpu,
            self.cpus,
            self.kernel,
            load(self.load_before),
            load(self.load_after),
            speed(self.speed_before),
            speed(self.speed_after)
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
/// does not see a host that slows memory-bound code at full clock (session
/// 19 saw rows move twofold with every probe at 3.6 GHz). `None` off x86-64.
pub fn core_speed_ghz() -> Option<f64> {
    core_speed(10_000_000)
}

/// A measurement is taken again while the core's speed probe, just before
/// or just after it, read below this share of the fastest probe so far: on
/// a shared host the core slows to about half for seconds at a time, and
/// every time taken meanwhile with it.
pub const SLOW_SHARE: f64 = 0.9;

/// Measurements taken while the core kept its speed: [`SpeedGuard::measure`]
/// probes the core ([`core_speed`]) before and after a measurement and takes
/// it again while either probe read below [`SLOW_SHARE`] of the fastest
/// probe it has seen, counting retakes and measurements kept slow.
#[derive(Debug, Clone, Default)]
pub struct SpeedGuard {
    /// The fastest probe so far, GHz.
    pub fastest: f64,
    /// Measurements taken again.
    pub retaken: usize,
    /// Measurements kept although the core still ran slow.
    pub kept_slow: usize,
}

impl SpeedGuard {
    /// A guard whose fastest probe so far is `start` (a [`Machine`]'s
    /// `speed_before`, say).
    pub fn new(start: Option<f64>) -> SpeedGuard {
        SpeedGuard {
            fastest: start.unwrap_or(0.0),
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
    ) -> Result<(T, Option<f64>), E> {
        let mut tries = 0;
        loop {
            let before = core_speed(steps);
            let t = take()?;
            let after = core_speed(steps);
            let speed = before.zip(after).map(|(a, b)| a.min(b));
            self.fastest = [before, after]
                .into_iter()
                .flatten()
                .fold(self.fastest, f64::max);
            let slow = speed.is_some_and(|g| g < SLOW_SHARE * self.fastest);
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
        let mut best = 0f64;
        // The loop is in the assembly, four additions a turn, so that the
        // chain is the same in a debug build as in a release build (the
        // counter's decrement and branch run beside it).
        let turns = u64::from(steps / 4).max(1);
        for _ in 0..3 {
            let mut x = 0u64;
            let t = std::time::Instant::now();
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
            let ns = t.elapsed().as_secs_f64() * 1e9;
            std::hint::black_box(x);
            best = best.max((4 * turns) as f64 / ns.max(1.0));
        }
        Some(best)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = steps;
        None
    }
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
            "p,frame_size,h,repeat,packets,seconds,cpu_seconds,ns_per_packet,model_ns,relative_residual,core_ghz\n",
        );
        for pt in &self.points {
            let y = self.fit.predict(pt.p as f64, f64::from(pt.h));
            s.push_str(&format!(
                "{},{},{},{},{},{:.6},{:.6},{:.4},{:.4},{:.5},{}\n",
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
                pt.core_ghz.map_or(String::new(), |g| format!("{g:.3}"))
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
