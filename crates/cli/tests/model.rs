//! `linerate model`: a quick calibration end to end (report, model file,
//! CSV, plots), predictions from it and from the whitepaper's numbers, and
//! a network function placed in the model.

mod common;

use common::{linerate, run, TempDir};

#[test]
fn quick_calibration_writes_model_csv_and_plots() {
    let t = TempDir::new("model");
    let (json, csv, plots) = (t.join("m.json"), t.join("m.csv"), t.join("plots"));
    let o = run(&mut linerate(&[
        "model",
        "calibrate",
        "--quick",
        "--out",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]));
    o.expect_code(0);
    for want in [
        "C = ",
        "P = ",
        "H = ",
        "R² = ",
        "95 % CI",
        "worst points:",
        "noise:",
        "machine:",
    ] {
        assert!(
            o.stdout.contains(want),
            "missing {want:?} in:\n{}",
            o.stdout
        );
    }
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(m["format"], "linerate-model/1");
    assert_eq!(m["io"], "memory");
    assert_eq!(m["points"].as_array().unwrap().len(), 3 * 3 * 2);
    assert!(m["fit"]["r2"].as_f64().unwrap().is_finite());
    assert!(
        m["fit"]["c"]["ci_low"].as_f64().unwrap() <= m["fit"]["c"]["ci_high"].as_f64().unwrap()
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 18);
    // Every run carries the core's speed around it (x86-64: the probe runs).
    #[cfg(target_arch = "x86_64")]
    {
        assert!(
            o.stdout.contains("core speed around the runs: "),
            "{}",
            o.stdout
        );
        assert!(csv.lines().next().unwrap().ends_with(",core_ghz,core_adds"));
        for l in csv.lines().skip(1) {
            let mut last = l.rsplit(',').map(|v| v.parse::<f64>().unwrap());
            let (adds, ghz) = (last.next().unwrap(), last.next().unwrap());
            assert!((0.1..10.0).contains(&ghz), "{l}");
            assert!((0.1..80.0).contains(&adds), "{l}");
        }
        assert!(o.stdout.contains(" adds/ns; "), "{}", o.stdout);
        let pts = m["points"].as_array().unwrap();
        assert!(pts.iter().all(|p| p["core_ghz"].as_f64().is_some()));
        assert!(pts.iter().all(|p| p["core_adds"].as_f64().is_some()));
        assert!(m["retaken"].as_u64().is_some() && m["kept_slow"].as_u64().is_some());
    }
    for f in [
        "fit.svg",
        "cores-64.svg",
        "cores-1518.svg",
        "cores-imix.svg",
    ] {
        let s = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(s.contains("<svg"), "{f}");
    }

    // Predictions from the new model, with the IMIX and several rates.
    let o = run(&mut linerate(&[
        "model",
        "predict",
        "--model",
        json.to_str().unwrap(),
        "--rate",
        "10G,100G",
        "--size",
        "64",
        "--steps",
        "0,20",
        "--imix",
    ]));
    o.expect_code(0);
    assert!(o.stdout.contains("IMIX"), "{}", o.stdout);
    assert_eq!(
        o.stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("100G"))
            .count(),
        4
    );

    // A network function: the test function itself without the steps.
    let nf = t.write("nf.click", "$INPUT -> VLANEncap(VLAN_ID 100) -> Discard;\n");
    let o = run(&mut linerate(&[
        "model",
        "nf",
        nf.to_str().unwrap(),
        "--model",
        json.to_str().unwrap(),
        "--quick",
        "--size",
        "64,1518",
    ]));
    o.expect_code(0);
    assert!(
        o.stdout.contains("h_eq") && o.stdout.contains("100GbE"),
        "{}",
        o.stdout
    );
    // Its runs are probed and retaken as a calibration's are.
    #[cfg(target_arch = "x86_64")]
    assert!(
        o.stdout
            .contains("runs retaken while a core probe read below 90 %"),
        "{}",
        o.stdout
    );
    let bad = t.write("bad.click", "InfiniteSource -> Discard;\n");
    let o = run(&mut linerate(&[
        "model",
        "nf",
        bad.to_str().unwrap(),
        "--model",
        "whitepaper",
    ]));
    o.expect_code(1);
    assert!(o.stderr.contains("$INPUT exactly once"), "{}", o.stderr);
}

#[test]
fn predict_with_the_whitepaper_numbers() {
    let o = run(&mut linerate(&[
        "model",
        "predict",
        "--model",
        "whitepaper",
        "--rate",
        "100G",
        "--size",
        "0,64,1518",
        "--json",
    ]));
    o.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let cores: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cores"].as_f64().unwrap())
        .collect();
    // 38.6 / 6.72; (38.6 + 0.101*60) / 6.72; (38.6 + 0.101*1514) / 123.04.
    let want = [5.744, 6.646, 1.557];
    for (c, w) in cores.iter().zip(want) {
        assert!((c - w).abs() < 0.001, "{cores:?}");
    }
    assert!((v[0]["mpps"].as_f64().unwrap() - 148.8095).abs() < 1e-4);
    let o = run(&mut linerate(&[
        "model",
        "predict",
        "--model",
        "whitepaper",
        "--rate",
        "10G",
        "--size",
        "64,1518",
    ]));
    o.expect_code(0);
    assert!(
        o.stdout.contains("14.881") && o.stdout.contains("0.813"),
        "{}",
        o.stdout
    );
    let o = run(&mut linerate(&[
        "model",
        "predict",
        "--model",
        "whitepaper",
        "--rate",
        "fast",
    ]));
    o.expect_code(1);
    assert!(o.stderr.contains("bad rate 'fast'"), "{}", o.stderr);
}

#[test]
fn bench_elements_prints_the_table() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "bench",
            "elements",
            "--runs",
            "1",
            "--packets",
            "20000",
            "Null",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.starts_with("| element | configuration |"), "{s}");
    let row = s
        .lines()
        .find(|l| l.starts_with("| Null |"))
        .expect("a Null row");
    assert!(row.contains("| no-op | 64 |"), "{row}");
    assert!(
        !s.contains("| Counter |"),
        "the filter keeps only Null: {s}"
    );
    assert!(
        s.lines()
            .any(|l| l.starts_with("machine: ") && l.contains(" CPUs, kernel ")),
        "the table ends with the machine it ran on: {s}"
    );
}
