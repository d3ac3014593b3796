//! The model's statistics and arithmetic: the fit recovers known parameters
//! (and its intervals cover them at the stated rate), the line-rate numbers
//! match hand-computed values, and model files round-trip.

use linerate_model::calibrate::{fit_points, noise};
use linerate_model::ether::{self, Mix};
use linerate_model::fit::{fit, Obs};
use linerate_model::{predict, whitepaper_fit, Machine, Model, Point, FORMAT};

/// xorshift64* uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

const LENGTHS: [f64; 6] = [60.0, 128.0, 256.0, 512.0, 1024.0, 1514.0];
const STEPS: [f64; 6] = [0.0, 10.0, 25.0, 50.0, 100.0, 150.0];
const TRUE: (f64, f64, f64) = (12.0, 0.05, 1.3);

/// Synthetic runs with multiplicative noise of relative SD `sd`, weighted
/// as the calibration weights them.
fn synthetic(rng: &mut Rng, sd: f64, repeats: usize) -> Vec<Point> {
    let mut v = Vec::new();
    for &p in &LENGTHS {
        for &h in &STEPS {
            for rep in 0..repeats {
                let t = (TRUE.0 + TRUE.1 * p + TRUE.2 * h) * (1.0 + sd * rng.normal());
                v.push(Point {
                    p: p as u64,
                    h: h as u32,
                    rep,
                    packets: 1_000_000,
                    seconds: t * 1e-3,
                    cpu_seconds: t * 1e-3,
                    ns_per_packet: t,
                    core_ghz: None,
                    core_adds: None,
                });
            }
        }
    }
    v
}

#[test]
fn exact_data_is_fitted_exactly() {
    let obs: Vec<Obs> = LENGTHS
        .iter()
        .flat_map(|&p| {
            STEPS.iter().map(move |&h| Obs {
                p,
                h,
                t: TRUE.0 + TRUE.1 * p + TRUE.2 * h,
                w: 1.0,
            })
        })
        .collect();
    let f = fit(&obs).unwrap();
    assert!((f.c.value - TRUE.0).abs() < 1e-9, "{f:?}");
    assert!((f.p.value - TRUE.1).abs() < 1e-12);
    assert!((f.h.value - TRUE.2).abs() < 1e-11);
    assert!((f.r2 - 1.0).abs() < 1e-12);
    assert!(f.max_rel_residual < 1e-10);
    assert_eq!(f.dof, 33);
}

#[test]
fn noisy_fit_recovers_parameters_within_its_intervals() {
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let pts = synthetic(&mut rng, 0.01, 3);
    let f = fit_points(&pts).unwrap();
    for (name, prm, truth) in [("C", f.c, TRUE.0), ("P", f.p, TRUE.1), ("H", f.h, TRUE.2)] {
        assert!(
            prm.ci_low <= truth && truth <= prm.ci_high,
            "{name}: {truth} outside [{}, {}]",
            prm.ci_low,
            prm.ci_high
        );
        assert!(
            prm.se > 0.0 && prm.se < 0.05 * truth,
            "{name}: SE {}",
            prm.se
        );
    }
    assert!(f.r2 > 0.99, "R² {}", f.r2);
    assert!((f.sigma_rel - 0.01).abs() < 0.003, "σ {}", f.sigma_rel);
    assert_eq!(f.n, 108);
    let n = noise(&pts);
    assert!(n.median_cv > 0.003 && n.median_cv < 0.02, "{n:?}");
}

#[test]
fn intervals_cover_the_truth_about_95_percent_of_the_time() {
    let mut rng = Rng(0xDEAD_BEEF_0BAD_F00D);
    let trials = 400;
    let mut covered = [0usize; 3];
    for _ in 0..trials {
        let f = fit_points(&synthetic(&mut rng, 0.02, 2)).unwrap();
        for (i, (prm, truth)) in [(f.c, TRUE.0), (f.p, TRUE.1), (f.h, TRUE.2)]
            .into_iter()
            .enumerate()
        {
            covered[i] += usize::from(prm.ci_low <= truth && truth <= prm.ci_high);
        }
    }
    // Binomial(400, 0.95): SD 4.4 points; allow about 3.5 SD either side.
    // The weights come from the noisy means, so coverage is only near 95 %.
    for c in covered {
        assert!(
            (365..=398).contains(&c),
            "coverage {c}/{trials}: {covered:?}"
        );
    }
}

#[test]
fn degenerate_grids_are_errors() {
    let obs: Vec<Obs> = STEPS
        .iter()
        .map(|&h| Obs {
            p: 64.0,
            h,
            t: 10.0 + h,
            w: 1.0,
        })
        .collect();
    assert!(fit(&obs).unwrap_err().contains("two packet lengths"));
    assert!(fit(&obs[..3]).is_err());
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn line_rate_arithmetic() {
    // 10GbE: 64-byte frames take 84 bytes of line time.
    assert_eq!(ether::wire_bytes(64), 84);
    assert_eq!(ether::wire_bytes(1518), 1538);
    assert_eq!(ether::wire_bytes(0), 84);
    assert!(close(
        ether::frames_per_second(10e9, 64),
        14_880_952.38,
        0.01
    ));
    assert!(close(
        ether::frames_per_second(10e9, 1518),
        812_743.82,
        0.01
    ));
    assert!(close(
        ether::frames_per_second(100e9, 64),
        148_809_523.8,
        0.1
    ));
    assert!(close(
        ether::frames_per_second(25e9, 64),
        37_202_380.95,
        0.01
    ));
    assert!(close(
        ether::frames_per_second(40e9, 64),
        59_523_809.52,
        0.01
    ));
    assert!(close(
        ether::frames_per_second(400e9, 64),
        595_238_095.2,
        0.1
    ));
    assert!(close(ether::ns_per_frame(100e9, 64), 6.72, 1e-12));
    assert_eq!(ether::packet_len(64), 60);
    assert_eq!(ether::packet_len(0), 0);
    for (s, v) in [
        ("100G", 100e9),
        ("25g", 25e9),
        ("2.5G", 2.5e9),
        ("400Gbps", 400e9),
        ("800M", 800e6),
    ] {
        assert_eq!(ether::parse_rate(s).unwrap(), v, "{s}");
    }
    assert!(ether::parse_rate("fast").is_err());
    assert!(ether::parse_rate("-1G").is_err());
    assert_eq!(ether::rate_name(2.5e9), "2.5G");
    assert_eq!(ether::rate_name(100e9), "100G");
}

#[test]
fn imix_arithmetic() {
    let m = Mix::imix();
    // (7*64 + 4*594 + 1518) / 12 = 4342 / 12.
    assert!(close(m.mean_size(), 361.8333, 1e-4));
    assert!(close(m.mean_wire_bytes(), 381.8333, 1e-4));
    assert!(close(m.mean_packet_len(), 357.8333, 1e-4));
    // 100 Gbit/s / (381.8333 * 8 bit) = 32.7368 Mpps.
    assert!(close(m.frames_per_second(100e9) / 1e6, 32.7368, 1e-4));
}

#[test]
fn whitepaper_predictions() {
    let f = whitepaper_fit();
    // Zero-byte packets at the 64-byte frame rate: 38.6 / 6.72 = 5.74 cores.
    let z = predict(&f, 100e9, &Mix::single(0), 0.0);
    assert!(close(z.cores, 38.6 / 6.72, 1e-12));
    assert!(close(z.mpps, 148.8095, 1e-4));
    // 64-byte frames (60 bytes in memory): (38.6 + 0.101*60) / 6.72 = 6.646.
    let s64 = predict(&f, 100e9, &Mix::single(64), 0.0);
    assert!(close(s64.cores, 44.66 / 6.72, 1e-12));
    assert!(close(s64.mean_p, 60.0, 0.0));
    // 1518-byte frames: (38.6 + 0.101*1514) / 123.04 = 1.557.
    let big = predict(&f, 100e9, &Mix::single(1518), 0.0);
    assert!(close(big.budget_ns, 123.04, 1e-9));
    assert!(close(big.cores, (38.6 + 0.101 * 1514.0) / 123.04, 1e-12));
    // 100 steps: (38.6 + 6.06 + 407) / 6.72 = 67.2 cores.
    let deep = predict(&f, 100e9, &Mix::single(64), 100.0);
    assert!(close(deep.cores, 451.66 / 6.72, 1e-9));
    // 10GbE, 64 bytes, 20 steps: (38.6 + 6.06 + 81.4) / 67.2.
    let ten = predict(&f, 10e9, &Mix::single(64), 20.0);
    assert!(close(ten.cores, 126.06 / 67.2, 1e-9));
    // IMIX: T at the mean packet length over the mean line time.
    let im = predict(&f, 100e9, &Mix::imix(), 0.0);
    let t = 38.6 + 0.101 * (4342.0 / 12.0 - 4.0);
    assert!(close(im.cores, t / (381.8333333333333 * 8.0 / 100.0), 1e-9));
}

#[test]
fn prediction_intervals_widen_with_uncertainty() {
    let mut rng = Rng(42);
    let f = fit_points(&synthetic(&mut rng, 0.02, 2)).unwrap();
    let p = predict(&f, 100e9, &Mix::single(64), 20.0);
    assert!(p.cores_ci.0 < p.cores && p.cores < p.cores_ci.1, "{p:?}");
    let truth = (TRUE.0 + TRUE.1 * 60.0 + TRUE.2 * 20.0) / 6.72;
    assert!(
        (p.cores - truth).abs() / truth < 0.05,
        "{} vs {truth}",
        p.cores
    );
}

#[test]
fn model_file_round_trips() {
    let mut rng = Rng(7);
    let points = synthetic(&mut rng, 0.01, 2);
    let m = Model {
        format: FORMAT.into(),
        io: "memory".into(),
        clock: "cpu".into(),
        estimator: "min".into(),
        created_unix: 1_790_000_000,
        command: "linerate model calibrate".into(),
        machine: Machine::current(),
        lengths: LENGTHS.iter().map(|&p| p as u64).collect(),
        steps: STEPS.iter().map(|&h| h as u32).collect(),
        repeats: 2,
        duration_s: 12.5,
        fit: fit_points(&points).unwrap(),
        other_clock_fit: Some(fit_points(&points).unwrap()),
        noise: noise(&points),
        retaken: 0,
        kept_slow: 0,
        points,
    };
    let json = m.to_json();
    let back: Model = serde_json::from_str(&json).unwrap();
    assert_eq!(back, m);
    let dir = std::env::temp_dir().join(format!("linerate-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("m.json");
    std::fs::write(&f, &json).unwrap();
    assert_eq!(Model::load(&f).unwrap(), m);
    std::fs::write(&f, json.replace(FORMAT, "other/9")).unwrap();
    assert!(Model::load(&f)
        .unwrap_err()
        .contains("not a linerate-model/1 file"));
    // The CSV has a header and one line per run.
    let csv = m.to_csv();
    assert_eq!(csv.lines().count(), 1 + m.points.len());
    assert!(csv.starts_with("p,frame_size,h,repeat,packets,seconds,cpu_seconds,ns_per_packet,"));
    // Plots are SVG files.
    let files = linerate_model::plot::write_all(&m, &dir).unwrap();
    assert_eq!(files.len(), 4);
    for f in files {
        let s = std::fs::read_to_string(&f).unwrap();
        assert!(
            s.contains("<svg") && s.contains("</svg>"),
            "{}",
            f.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn machine_reports_the_core_speed() {
    let mut m = Machine::current();
    m.end();
    #[cfg(target_arch = "x86_64")]
    for (g, a) in [
        (m.speed_before, m.adds_before),
        (m.speed_after, m.adds_after),
    ] {
        let (g, a) = (g.expect("probed on x86-64"), a.expect("probed on x86-64"));
        // One addition a cycle: a core runs 0.1 to 10 of them a nanosecond
        // (a chain that did not run would read far above 10).
        assert!((0.1..10.0).contains(&g), "{g}");
        // Four chains: more than one chain's rate unless the core was taken
        // away in between, and at most one addition a cycle on each of
        // eight ALUs.
        assert!((0.1..80.0).contains(&a), "{a}");
    }
    assert!(m.start_speed().is_some());
    assert!(m.summary().contains(" GHz before, "), "{}", m.summary());
    assert!(m.summary().contains(" adds/ns before, "), "{}", m.summary());
    // A model file written before the probes existed still loads.
    let mut v = serde_json::to_value(&m).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["speed_before", "speed_after", "adds_before", "adds_after"] {
        assert!(o.remove(k).is_some(), "{k}");
    }
    let back: Machine = serde_json::from_value(v).unwrap();
    assert_eq!((back.speed_before, back.speed_after), (None, None));
    assert_eq!((back.adds_before, back.adds_after), (None, None));
    assert_eq!(back.start_speed(), None);
    assert_eq!(back.load_before, m.load_before);
}

#[test]
fn speed_guard_retakes_slow_measurements_and_counts_them() {
    use linerate_model::{CoreSpeed, SpeedGuard};
    let unreachable = CoreSpeed {
        ghz: 1000.0,
        adds: 1000.0,
    };
    // A fastest probe no core reaches: every measurement reads slow.
    let mut g = SpeedGuard::new(Some(unreachable));
    let mut calls = 0;
    let (v, speed) = g
        .measure(100_000, 2, || {
            calls += 1;
            Ok::<_, ()>(calls)
        })
        .unwrap();
    #[cfg(target_arch = "x86_64")]
    {
        assert_eq!((v, calls), (3, 3), "taken once and retaken twice");
        assert_eq!((g.retaken, g.kept_slow), (2, 1));
        assert!(speed.is_some_and(|s| s.ghz < 1000.0 && s.adds < 1000.0));
    }
    #[cfg(not(target_arch = "x86_64"))]
    assert_eq!((v, speed, g.retaken), (1, None, 0));
    // Either probe alone makes a measurement slow: a clock any core
    // reaches with an issue rate none does (another thread on the core).
    let mut g = SpeedGuard::new(Some(CoreSpeed {
        ghz: 0.001,
        adds: 1000.0,
    }));
    let (v, _) = g.measure(100_000, 1, || Ok::<_, ()>(7)).unwrap();
    #[cfg(target_arch = "x86_64")]
    assert_eq!((v, g.retaken, g.kept_slow), (7, 1, 1));
    #[cfg(not(target_arch = "x86_64"))]
    assert_eq!((v, g.retaken), (7, 0));
    let fastest = CoreSpeed {
        ghz: 3.0,
        adds: 12.0,
    };
    for (ghz, adds, slow) in [
        (3.0, 12.0, false),
        (2.8, 11.0, false),
        (2.6, 12.0, true),
        (3.0, 10.0, true),
    ] {
        assert_eq!(
            CoreSpeed { ghz, adds }.slower_than(fastest),
            slow,
            "{ghz} {adds}"
        );
    }
    // An error ends the measurement at once.
    let mut g = SpeedGuard::new(Some(unreachable));
    assert_eq!(g.measure(100_000, 2, || Err::<(), _>("no")), Err("no"));
    assert_eq!(g.retaken, 0);
}
