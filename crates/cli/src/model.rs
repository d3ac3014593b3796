//! `linerate model`: calibrate the performance model `T = C + P·p + H·h`,
//! predict the cores a line rate needs, and place a network function in the
//! model (docs/model.md).

use linerate_model::calibrate::{self, Clock, Estimator, Io, Options};
use linerate_model::ether::{self, Mix};
use linerate_model::fit::Fit;
use linerate_model::{plot, predict, Model};
use std::path::{Path, PathBuf};

/// The model file commands read and write by default.
const DEFAULT_MODEL: &str = "linerate-model.json";

#[derive(clap::Subcommand, Debug)]
pub enum ModelCmd {
    /// Measure C, P and H on this machine through an I/O path and fit the model.
    Calibrate {
        /// I/O path: memory (in-memory replay) or pcap (FromDump -> ToDump).
        #[arg(long, default_value = "memory")]
        io: String,
        /// A small grid (3 lengths x 3 step counts, 2 short runs each), for tests.
        #[arg(long)]
        quick: bool,
        /// Write the model (JSON) here.
        #[arg(long, default_value = DEFAULT_MODEL)]
        out: PathBuf,
        /// Write SVG plots into this directory.
        #[arg(long)]
        plots: Option<PathBuf>,
        /// Write every run as CSV here.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Compare C, P and H with an earlier model file.
        #[arg(long)]
        compare: Option<PathBuf>,
        /// Runs per grid point (default 3, quick 2).
        #[arg(long)]
        repeats: Option<usize>,
        /// Clock the fit uses: cpu (the thread's CPU time, robust on a shared
        /// machine) or wall (monotonic wall clock). Both are recorded.
        #[arg(long, default_value = "cpu")]
        clock: String,
        /// How the runs of a grid point enter the fit: min (the fastest run,
        /// default) or all (default with --quick).
        #[arg(long)]
        estimator: Option<String>,
    },
    /// Cores needed for line rate, from a model.
    Predict {
        /// Line rates, comma-separated (default 10G,25G,40G,100G,400G).
        #[arg(long, value_delimiter = ',')]
        rate: Vec<String>,
        /// Frame sizes in bytes including the FCS, comma-separated (default 64,1518).
        #[arg(long, value_delimiter = ',')]
        size: Vec<u64>,
        /// Parse-and-lookup steps per packet, comma-separated (default 0).
        #[arg(long, value_delimiter = ',')]
        steps: Vec<f64>,
        /// Model file, or `whitepaper` for the whitepaper's C, P and H.
        #[arg(long, default_value = DEFAULT_MODEL)]
        model: String,
        /// Add the simple IMIX (7 x 64, 4 x 594, 1 x 1518-byte frames).
        #[arg(long)]
        imix: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Measure a configuration over packet lengths and place it in the model.
    /// The configuration must use `$INPUT` once, where its packet source goes.
    Nf {
        /// Configuration file.
        config: PathBuf,
        /// I/O path: memory or pcap.
        #[arg(long, default_value = "memory")]
        io: String,
        /// Model file, or `whitepaper`.
        #[arg(long, default_value = DEFAULT_MODEL)]
        model: String,
        /// Frame sizes including the FCS, comma-separated (default 64,128,256,512,1024,1518).
        #[arg(long, value_delimiter = ',')]
        size: Vec<u64>,
        /// Shorter runs.
        #[arg(long)]
        quick: bool,
        /// Clock: cpu or wall.
        #[arg(long, default_value = "cpu")]
        clock: String,
    },
}

pub fn main(cmd: ModelCmd) -> i32 {
    let r = match cmd {
        ModelCmd::Calibrate {
            io,
            quick,
            out,
            plots,
            csv,
            compare,
            repeats,
            clock,
            estimator,
        } => Clock::parse(&clock).and_then(|clock| {
            calibrate_cmd(
                &io, quick, &out, plots, csv, compare, repeats, clock, estimator,
            )
        }),
        ModelCmd::Predict {
            rate,
            size,
            steps,
            model,
            imix,
            json,
        } => predict_cmd(rate, size, steps, &model, imix, json),
        ModelCmd::Nf {
            config,
            io,
            model,
            size,
            quick,
            clock,
        } => {
            Clock::parse(&clock).and_then(|clock| nf_cmd(&config, &io, &model, size, quick, clock))
        }
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("linerate model: {e}");
            1
        }
    }
}

fn param_line(name: &str, unit: &str, p: &linerate_model::fit::Param, prec: usize) -> String {
    format!(
        "{name} = {v:.prec$} {unit}  (95 % CI {lo:.prec$} to {hi:.prec$}, SE {se:.prec$})\n",
        v = p.value,
        lo = p.ci_low,
        hi = p.ci_high,
        se = p.se,
    )
}

/// The calibration report.
pub fn report(m: &Model) -> String {
    let f = &m.fit;
    let mut s = format!(
        "linerate model: {} I/O, {} clock, {} lengths x {} step counts x {} runs = {} runs in {:.1} s; fit on {}\n",
        m.io,
        m.clock,
        m.lengths.len(),
        m.steps.len(),
        m.repeats,
        m.points.len(),
        m.duration_s,
        if m.estimator == "min" {
            "the fastest run of each grid point"
        } else {
            "every run"
        }
    );
    s += &param_line("C", "ns", &f.c, 2);
    s += &param_line("P", "ns/B", &f.p, 4);
    s += &param_line("H", "ns", &f.h, 3);
    s += &format!(
        "R² = {:.4} (weighted {:.4}); residual SD {:.2} %; largest residual {:.2} %; {} of {} fitted points above 3 %\n",
        f.r2,
        f.r2_weighted,
        f.sigma_rel * 100.0,
        f.max_rel_residual * 100.0,
        f.above_3pct,
        f.n
    );
    if let Some(o) = &m.other_clock_fit {
        s += &format!(
            "on the {} clock instead: C = {:.2} ns, P = {:.4} ns/B, H = {:.3} ns, R² = {:.4}\n",
            if m.clock == "cpu" { "wall" } else { "cpu" },
            o.c.value,
            o.p.value,
            o.h.value,
            o.r2
        );
    }
    s += "worst points:\n";
    for w in f.worst.iter().take(5) {
        s += &format!(
            "  p = {:>4}, h = {:>3}: measured {:8.2} ns, model {:8.2} ns, {:+.2} %\n",
            w.p,
            w.h,
            w.measured,
            w.predicted,
            w.relative * 100.0
        );
    }
    s += &format!(
        "noise: coefficient of variation of repeated runs: median {:.2} %, largest {:.2} % (p = {}, h = {})\n",
        m.noise.median_cv * 100.0,
        m.noise.max_cv * 100.0,
        m.noise.max_cv_at.0,
        m.noise.max_cv_at.1
    );
    let sorted = |f: fn(&linerate_model::Point) -> Option<f64>| {
        let mut v: Vec<f64> = m.points.iter().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (ghz, adds) = (sorted(|pt| pt.core_ghz), sorted(|pt| pt.core_adds));
    let range = |v: &[f64], digits: usize| {
        format!(
            "{:.digits$} to {:.digits$}, median {:.digits$}",
            v[0],
            v[v.len() - 1],
            v[v.len() / 2]
        )
    };
    if !ghz.is_empty() {
        s += &format!("core speed around the runs: {} GHz", range(&ghz, 2));
        if !adds.is_empty() {
            s += &format!("; issue rate {} adds/ns", range(&adds, 1));
        }
        s += &format!(
            "; {} runs retaken while a probe read below {:.0} % of its fastest, {} kept slow after {} retakes\n",
            m.retaken,
            linerate_model::SLOW_SHARE * 100.0,
            m.kept_slow,
            calibrate::RETAKES
        );
    }
    s += &format!("machine: {}\n", m.machine.summary());
    s
}

#[allow(clippy::too_many_arguments)]
fn calibrate_cmd(
    io: &str,
    quick: bool,
    out: &Path,
    plots: Option<PathBuf>,
    csv: Option<PathBuf>,
    compare: Option<PathBuf>,
    repeats: Option<usize>,
    clock: Clock,
    estimator: Option<String>,
) -> Result<(), String> {
    let io = Io::parse(io)?;
    let mut opts = if quick {
        Options::quick(io)
    } else {
        Options::full(io)
    };
    if let Some(r) = repeats {
        opts.repeats = r.max(1);
    }
    // A progress line only on a terminal, as for file sources.
    opts.progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    opts.clock = clock;
    if let Some(e) = estimator {
        opts.estimator = Estimator::parse(&e)?;
    }
    opts.command = std::env::args().collect::<Vec<_>>().join(" ");
    let old = compare.as_deref().map(Model::load).transpose()?;
    let m = calibrate::calibrate(&opts)?;
    let mut text = report(&m);
    if let Some(old) = &old {
        text += "against the earlier model:\n";
        for (n, a, b, d) in linerate_model::compare(&old.fit, &m.fit) {
            text += &format!("  {n}: {a:.4} then, {b:.4} now ({:+.1} %)\n", d * 100.0);
        }
    }
    let write =
        |p: &Path, s: &str| std::fs::write(p, s).map_err(|e| format!("{}: {e}", p.display()));
    write(out, &m.to_json())?;
    text += &format!("wrote {}\n", out.display());
    if let Some(c) = &csv {
        write(c, &m.to_csv())?;
        text += &format!("wrote {}\n", c.display());
    }
    if let Some(d) = &plots {
        for f in plot::write_all(&m, d)? {
            text += &format!("wrote {}\n", f.display());
        }
    }
    crate::write_stdout(&text);
    Ok(())
}

fn load_fit(name: &str) -> Result<(Fit, String), String> {
    if name == "whitepaper" {
        return Ok((
            linerate_model::whitepaper_fit(),
            "the whitepaper's (DPDK, Xeon E5-2687W v4)".into(),
        ));
    }
    let path = Path::new(name);
    if name == DEFAULT_MODEL && !path.exists() {
        return Err(format!(
            "no {DEFAULT_MODEL} here: run 'linerate model calibrate' first, or pass --model FILE (or --model whitepaper)"
        ));
    }
    let m = Model::load(path)?;
    let desc = format!("{name} ({} I/O, {})", m.io, m.machine.cpu);
    Ok((m.fit, desc))
}

fn predict_cmd(
    rates: Vec<String>,
    sizes: Vec<u64>,
    steps: Vec<f64>,
    model: &str,
    imix: bool,
    json: bool,
) -> Result<(), String> {
    let (fit, desc) = load_fit(model)?;
    let rates: Vec<f64> = if rates.is_empty() {
        ether::STANDARD_RATES.to_vec()
    } else {
        rates
            .iter()
            .map(|r| ether::parse_rate(r))
            .collect::<Result<_, _>>()?
    };
    let mut mixes: Vec<Mix> = if sizes.is_empty() && !imix {
        vec![Mix::single(64), Mix::single(1518)]
    } else {
        sizes.into_iter().map(Mix::single).collect()
    };
    if imix {
        mixes.push(Mix::imix());
    }
    let steps = if steps.is_empty() { vec![0.0] } else { steps };
    if let Some(h) = steps.iter().find(|h| !(**h >= 0.0 && h.is_finite())) {
        return Err(format!("bad step count {h}"));
    }
    let mut preds = Vec::new();
    for &r in &rates {
        for mix in &mixes {
            for &h in &steps {
                preds.push(predict(&fit, r, mix, h));
            }
        }
    }
    if json {
        let s = serde_json::to_string_pretty(&preds).map_err(|e| e.to_string())? + "\n";
        crate::write_stdout(&s);
        return Ok(());
    }
    let mut s = format!(
        "model: {desc}: C = {:.2} ns, P = {:.4} ns/B, H = {:.3} ns\n\
         frame = bytes with FCS; p = frame - 4 (what the software sees); \
         line time = max(frame, 64) + 20 bytes (preamble, SFD, gap)\n\n",
        fit.c.value, fit.p.value, fit.h.value
    );
    s += &format!(
        "{:>6} {:>8} {:>8} {:>7} {:>6} {:>9} {:>9} {:>9} {:>8} {:>6}  95 % CI\n",
        "rate", "traffic", "frame", "p", "h", "Mpps", "budget", "T (ns)", "cores", "whole"
    );
    for p in &preds {
        let ci = if fit.dof > 0 {
            format!("{:.2} to {:.2}", p.cores_ci.0, p.cores_ci.1)
        } else {
            "-".to_string()
        };
        s += &format!(
            "{:>6} {:>8} {:>8.1} {:>7.1} {:>6} {:>9.3} {:>9.3} {:>9.2} {:>8.2} {:>6}  {ci}\n",
            ether::rate_name(p.rate_bps),
            p.traffic,
            p.mean_frame,
            p.mean_p,
            p.steps,
            p.mpps,
            p.budget_ns,
            p.t_ns,
            p.cores,
            p.cores.ceil() as u64,
        );
    }
    crate::write_stdout(&s);
    Ok(())
}

fn nf_cmd(
    config: &Path,
    io: &str,
    model: &str,
    sizes: Vec<u64>,
    quick: bool,
    clock: Clock,
) -> Result<(), String> {
    let io = Io::parse(io)?;
    let (fit, desc) = load_fit(model)?;
    let text = std::fs::read_to_string(config).map_err(|e| format!("{}: {e}", config.display()))?;
    let sizes = if sizes.is_empty() {
        vec![64, 128, 256, 512, 1024, 1518]
    } else {
        sizes
    };
    let (target, repeats) = if quick { (0.02, 1) } else { (0.25, 3) };
    let (pts, guard) = calibrate::measure_nf(&text, io, &sizes, &fit, target, repeats, clock)?;
    let mut s = format!(
        "{}: {} I/O; model {desc}: C = {:.2} ns, P = {:.4} ns/B, H = {:.3} ns\n\
         T = median ns per packet over {repeats} run(s), source to sink, {} clock; h_eq = (T - C - P*p) / H; \
         cores = T / line-time budget\n\n",
        config.display(),
        io.name(),
        fit.c.value,
        fit.p.value,
        fit.h.value,
        clock.name()
    );
    s += &format!("{:>6} {:>6} {:>9} {:>8}", "frame", "p", "T (ns)", "h_eq");
    for r in ether::STANDARD_RATES {
        s += &format!(" {:>8}", format!("{}bE", ether::rate_name(r)));
    }
    s.push('\n');
    for p in &pts {
        s += &format!(
            "{:>6} {:>6} {:>9.2} {:>8.1}",
            p.frame, p.p, p.ns_per_packet, p.h_equiv
        );
        for r in ether::STANDARD_RATES {
            s += &format!(
                " {:>8.2}",
                p.ns_per_packet / ether::ns_per_frame(r, p.frame)
            );
        }
        s.push('\n');
    }
    let h: Vec<f64> = pts.iter().map(|p| p.h_equiv).collect();
    s += &format!(
        "\nequivalent steps: median {:.1} (range {:.1} to {:.1}); a negative h_eq means the function costs less than the calibration's (which copies every packet once)\n",
        linerate_model::stats::median(&h),
        h.iter().copied().fold(f64::INFINITY, f64::min),
        h.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    );
    if let Some(f) = guard.fastest {
        s += &format!(
            "{} runs retaken while a core probe read below {:.0} % of its fastest ({}), {} kept slow after {} retakes\n",
            guard.retaken,
            linerate_model::SLOW_SHARE * 100.0,
            f.text(),
            guard.kept_slow,
            calibrate::RETAKES
        );
    }
    crate::write_stdout(&s);
    Ok(())
}
