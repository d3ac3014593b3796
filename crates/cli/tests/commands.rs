//! `linerate check`, `flatten`, `graph` and `elements`, and bad input files
//! (truncated, wrong magic, empty, a directory): clear errors or counted
//! skips, never a panic.

mod common;

use common::*;
use std::path::Path;

const COMPOUND: &str = "// A compound element and a variable.
define($LIMIT 7);
elementclass Pass { input -> c :: Counter -> output }
src :: InfiniteSource(LIMIT $LIMIT, STOP true)
  -> p :: Pass
  -> d :: Discard;
";

const CLASSES: [&str; 13] = [
    "Counter",
    "Discard",
    "FromDump",
    "Idle",
    "InfiniteSource",
    "Null",
    "Queue",
    "RatedSource",
    "StaticThreadSched",
    "Tee",
    "TimedSource",
    "ToDump",
    "Unqueue",
];

#[test]
fn check_prints_errors_only() {
    let t = TempDir::new("check");
    let good = t.write("good.click", COMPOUND);
    let o = run(linerate(&["check"]).arg(&good));
    o.expect_code(0);
    assert_eq!((o.stdout.as_str(), o.stderr.as_str()), ("", ""));
    // Variables and standard input.
    let o = run(linerate(&["check"]).arg(&good).arg("LIMIT=3"));
    o.expect_code(0);
    let o = run_stdin(&mut linerate(&["check", "-"]), COMPOUND);
    o.expect_code(0);
    assert_eq!(o.stderr, "");
    let o = run(&mut linerate(&["check", "-e", "Idle -> Discard"]));
    o.expect_code(0);

    // A parse error and a router error, each with location and line.
    let bad = t.write("bad.click", "Idle\n  -> Countr;\n");
    let o = run(linerate(&["check"]).arg(&bad));
    o.expect_code(1);
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains(&format!("{}:2:6: error", bad.display())),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("did you mean 'Counter'"), "{}", o.stderr);
    let o = run(&mut linerate(&["check", "-e", "Idle -> q :: Queue"]));
    o.expect_code(1);
    assert!(o.stderr.contains("<expr>:1:9: error"), "{}", o.stderr);
    assert!(o.stderr.contains("'q' output 0 unused"), "{}", o.stderr);

    // Nothing to check; a missing file.
    let o = run(&mut linerate(&["check"]));
    o.expect_code(1);
    assert!(o.stderr.contains("no configuration"), "{}", o.stderr);
    let o = run(linerate(&["check"]).arg(t.join("missing.click")));
    o.expect_code(1);
    assert!(o.stderr.contains("missing.click"), "{}", o.stderr);
}

#[test]
fn flatten_matches_the_click_driver_output() {
    let t = TempDir::new("flatten");
    let f = t.write("comp.click", COMPOUND);
    let flat = run(linerate(&["flatten"]).arg(&f).arg("LIMIT=3"));
    flat.expect_code(0);
    assert_eq!(
        flat.stdout,
        "src :: InfiniteSource(LIMIT 3, STOP true);\nd :: Discard;\np/c :: Counter;\n\n\
         src -> p/c\n    -> d;\n"
    );
    let o = run(t.click().args(["-q", "-o", "-"]).arg(&f).arg("LIMIT=3"));
    o.expect_code(0);
    assert_eq!(o.stdout, flat.stdout);
    // -e and standard input give the same text.
    let o = run(&mut linerate(&["flatten", "-e", COMPOUND, "LIMIT=3"]));
    o.expect_code(0);
    assert_eq!(o.stdout, flat.stdout);
    let o = run_stdin(&mut linerate(&["flatten", "-", "LIMIT=3"]), COMPOUND);
    o.expect_code(0);
    assert_eq!(o.stdout, flat.stdout);
    // Errors.
    let o = run(&mut linerate(&["flatten", "-e", "Idle -> Countr"]));
    o.expect_code(1);
    assert!(o.stdout.is_empty());
    assert!(o.stderr.contains("<expr>:1:9: error"), "{}", o.stderr);
}

#[test]
fn graph_prints_dot() {
    let t = TempDir::new("graph");
    let f = t.write("comp.click", COMPOUND);
    let o = run(linerate(&["graph"]).arg(&f));
    o.expect_code(0);
    assert!(o.stdout.starts_with("digraph"), "{}", o.stdout);
    assert!(o.stdout.trim_end().ends_with('}'), "{}", o.stdout);
    for name in ["src :: InfiniteSource", "p/c :: Counter", "d :: Discard"] {
        assert!(o.stdout.contains(name), "{name} in {}", o.stdout);
    }
    assert_eq!(o.stdout.matches("->").count(), 2, "{}", o.stdout);
    let o = run(&mut linerate(&["graph", "-e", "Idle -> Countr"]));
    o.expect_code(1);
    assert!(o.stdout.is_empty());
}

#[test]
fn elements_lists_classes_and_documents_one() {
    let o = run(&mut linerate(&["elements"]));
    o.expect_code(0);
    let listed: Vec<&str> = o.stdout.lines().collect();
    for c in CLASSES {
        assert!(listed.contains(&c), "{c} not in {listed:?}");
    }
    let o = run(&mut linerate(&["elements", "Counter"]));
    o.expect_code(0);
    assert!(o.stdout.starts_with("Counter — ports 1/1"), "{}", o.stdout);
    assert!(o.stdout.contains("Counts packets"), "{}", o.stdout);
    assert!(o.stdout.contains("`byte_count` (read)"), "{}", o.stdout);
    let o = run(&mut linerate(&["elements", "Countr"]));
    o.expect_code(1);
    assert!(o.stderr.contains("Countr"), "{}", o.stderr);
}

#[test]
fn elements_markdown_is_the_committed_reference() {
    let o = run(&mut linerate(&["elements", "--markdown"]));
    o.expect_code(0);
    for c in CLASSES {
        assert!(
            o.stdout.contains(&format!("\n## {c}\n")),
            "no section for {c}"
        );
    }
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/elements.md");
    match std::fs::read_to_string(&committed) {
        Ok(text) => assert!(
            text == o.stdout,
            "docs/elements.md is out of date: regenerate it with \
             `linerate elements --markdown > docs/elements.md`"
        ),
        Err(e) => eprintln!(
            "skipping the docs/elements.md comparison: {}: {e}",
            committed.display()
        ),
    }
}

/// Run `FromDump(file, STOP true) -> c :: Counter -> Discard` both as
/// `linerate run` and through `click`; returns the `linerate run` output.
fn from_dump(t: &TempDir, file: &Path) -> Out {
    let conf = format!(
        "FromDump({}, STOP true) -> c :: Counter -> Discard",
        file.display()
    );
    let o = run(&mut linerate(&["run", "-e", &conf, "-h", "c.count"]));
    o.no_panic();
    let k = run(t.click().args(["-e", &conf, "-h", "c.count"]));
    k.no_panic();
    assert_eq!(k.code, o.code, "click and linerate run disagree");
    o
}

#[test]
fn truncated_pcap_is_read_up_to_the_cut() {
    let t = TempDir::new("truncated");
    let trace = std::fs::read(TRACE).expect("trace");
    let recs = pcap_records(Path::new(TRACE)).expect("trace parses");
    // Cut inside the 1001st record's data, and inside its header.
    let mut off = 24;
    for r in &recs[..1000] {
        off += 16 + r.2 as usize;
    }
    for cut in [off + 20, off + 5] {
        let f = t.write("cut.pcap", &trace[..cut]);
        let o = from_dump(&t, &f);
        o.expect_code(0);
        assert_eq!(o.stdout, "1000\n", "cut at {cut}");
        assert!(o.stderr.contains("truncated"), "{}", o.stderr);
    }
}

#[test]
fn corrupt_record_length_is_reported_not_trusted() {
    let t = TempDir::new("corrupt");
    let mut d = std::fs::read(TRACE).expect("trace")[..200_000].to_vec();
    let recs = pcap_records(Path::new(TRACE)).expect("trace parses");
    let mut off = 24;
    for r in &recs[..10] {
        off += 16 + r.2 as usize;
    }
    // The 11th record claims a 2 GB capture.
    let le = d[0] == 0xd4;
    let huge = if le {
        0x7fff_ffffu32.to_le_bytes()
    } else {
        0x7fff_ffffu32.to_be_bytes()
    };
    d[off + 8..off + 12].copy_from_slice(&huge);
    let f = t.write("corrupt.pcap", &d);
    let o = from_dump(&t, &f);
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    assert!(o.stderr.contains("corrupt.pcap"), "{}", o.stderr);
    if o.code == Some(0) {
        assert_eq!(o.stdout, "10\n");
    }
}

#[test]
fn bad_files_are_clear_errors() {
    let t = TempDir::new("badfiles");
    let magic = t.write("magic.pcap", b"XXXXYYYYZZZZWWWWXXXXYYYYZZZZ");
    let empty = t.write("empty.pcap", b"");
    let short = t.write("short.pcap", &std::fs::read(TRACE).expect("trace")[..10]);
    let dir = t.join("adir");
    std::fs::create_dir(&dir).expect("mkdir");
    let missing = t.join("missing.pcap");
    for (f, what) in [
        (&magic, "magic"),
        (&empty, "header"),
        (&short, "header"),
        (&dir, "directory"),
        (&missing, "No such file"),
    ] {
        let o = from_dump(&t, f);
        o.expect_code(1);
        assert!(o.stdout.is_empty(), "{}: {}", f.display(), o.stdout);
        let s = o.stderr.to_lowercase();
        assert!(
            s.contains(&f.display().to_string().to_lowercase()) && s.contains(&what.to_lowercase()),
            "{}: want '{what}' in\n{}",
            f.display(),
            o.stderr
        );
    }
    // ToDump into a directory.
    let conf = format!(
        "InfiniteSource(LIMIT 5, STOP true) -> ToDump({})",
        dir.display()
    );
    let o = run(&mut linerate(&["run", "-e", &conf]));
    o.expect_code(1);
    assert!(o.stderr.contains("directory"), "{}", o.stderr);
}

#[test]
fn bad_configuration_files_are_clear_errors() {
    let t = TempDir::new("badconf");
    let dir = t.join("adir");
    std::fs::create_dir(&dir).expect("mkdir");
    let binary = t.write("bin.click", &std::fs::read(TRACE).expect("trace")[..3000]);
    let empty = t.write("empty.click", b"");
    for (f, code) in [(&dir, 1), (&binary, 1), (&empty, 0)] {
        let o = run(t.click().arg(f));
        o.expect_code(code);
        let o = run(linerate(&["check"]).arg(f));
        o.expect_code(code);
        let o = run(linerate(&["run"]).arg(f));
        o.expect_code(code);
        if code == 1 {
            assert!(
                o.stderr.contains(&format!("{}:", f.display())),
                "{}",
                o.stderr
            );
        }
    }
}

/// `linerate run` runs nfs/scion-br.click's step graph as one SCIONRouter
/// and says so; `--no-fuse` keeps the steps; `-o` shows the configuration
/// that ran.
#[test]
fn run_fuses_the_scion_step_graph_unless_told_not_to() {
    let t = TempDir::new("fuse");
    t.write(
        "topology.json",
        r#"{"isd_as": "1-ff00:0:110", "border_routers": {"br1": {
  "internal_addr": "10.0.0.1:30042", "interfaces": {
  "1": {"underlay": {"local": "192.0.2.1:50001", "remote": "192.0.2.101:50000"}, "isd_as": "1-ff00:0:100", "link_to": "parent"}}}}}"#,
    );
    std::fs::create_dir_all(t.join("keys")).unwrap();
    t.write("keys/master0.key", "c2Npb24tdmVjdG9ycy1rMA==\n");
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../nfs/scion-br.click");
    let cfg = format!("CONFIG={}", t.join("").display());
    // An empty classic pcap: the file header only (Ethernet, snaplen 65535).
    let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    pcap.extend([0; 8]);
    pcap.extend([0xff, 0xff, 0, 0, 1, 0, 0, 0]);
    let input = format!("INPUT={}", t.write("in.pcap", pcap).display());
    let output = format!("OUTPUT={}", t.join("out.pcap").display());
    for (flag, fused) in [(None, true), (Some("--no-fuse"), false)] {
        let mut args = vec!["run", "-q", "-o", "-"];
        args.extend(flag);
        let mut c = linerate(&args);
        c.arg(&conf).args([&cfg, &input, &output]);
        let o = run(&mut c);
        o.expect_code(0);
        assert_eq!(
            o.stderr.contains("run fused as one SCIONRouter 'br'"),
            fused,
            "{}",
            o.stderr
        );
        assert_eq!(
            o.stdout.contains("br :: SCIONRouter("),
            fused,
            "{}",
            o.stdout
        );
        assert_eq!(o.stdout.contains("SCIONParse("), !fused, "{}", o.stdout);
    }
}

#[test]
fn bench_elements_filters_by_description_and_reports_the_core_speed() {
    // "no-op" is only the description of Null's row.
    let o = run(&mut linerate(&[
        "bench",
        "elements",
        "--runs",
        "1",
        "--packets",
        "1000",
        "no-op",
    ]));
    o.expect_code(0);
    let rows: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 2, "{}", o.stdout);
    assert!(rows[0].ends_with("| core GHz, adds/ns |"), "{}", rows[0]);
    assert!(rows[1].starts_with("| Null | no-op | 64 |"), "{}", rows[1]);
    #[cfg(target_arch = "x86_64")]
    {
        let (ghz, adds) = rows[1]
            .trim_end_matches(" |")
            .rsplit("| ")
            .next()
            .unwrap()
            .split_once(", ")
            .unwrap();
        let (ghz, adds): (f64, f64) = (ghz.parse().unwrap(), adds.parse().unwrap());
        assert!((0.1..10.0).contains(&ghz), "{ghz}");
        assert!((0.1..80.0).contains(&adds), "{adds}");
    }
    assert!(
        o.stdout
            .contains("rounds measured again while the core read below 90 %"),
        "{}",
        o.stdout
    );
    let o = run(&mut linerate(&["bench", "elements", "no-such-row"]));
    o.expect_code(1);
    assert!(
        o.stderr.contains("no benchmark case matches"),
        "{}",
        o.stderr
    );
}
