//! The Click-compatible driver: the binary invoked as `click` (a symlink)
//! or as `linerate click`, with Click's options, output and exit statuses.

mod common;

use common::*;
use std::time::{Duration, Instant};

const COUNT10: &str = "InfiniteSource(LIMIT 10, STOP true) -> c :: Counter -> d :: Discard";
const DEFINE_N: &str =
    "define($N 5);\nInfiniteSource(LIMIT $N, STOP true)\n  -> c :: Counter\n  -> d :: Discard;\n";

#[test]
fn expression_with_one_handler_prints_just_the_value() {
    let t = TempDir::new("expr");
    let o = run(t.click().args(["-e", COUNT10, "-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "10\n");
    // The same through `linerate click`.
    let o = run(&mut linerate(&["click", "-e", COUNT10, "-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "10\n");
}

#[test]
fn several_handlers_print_named_blocks() {
    let t = TempDir::new("handlers");
    let o = run(t
        .click()
        .args(["-e", COUNT10, "-h", "c.count", "--handler", "d.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "c.count:\n10\n\nd.count:\n10\n\n");
}

#[test]
fn unknown_handler_is_an_error() {
    let t = TempDir::new("badhandler");
    let o = run(t.click().args(["-e", COUNT10, "-h", "c.nothere"]));
    o.expect_code(1);
    assert!(o.stderr.contains("c.nothere"), "{}", o.stderr);
}

#[test]
fn config_from_file_option_positional_and_stdin() {
    let t = TempDir::new("sources");
    let f = t.write("n.click", DEFINE_N);
    let f = f.to_str().expect("utf-8 path");
    let cases: [(&[&str], Option<&str>, &str); 6] = [
        (&["-f", f], None, "5\n"),
        (&["--file", f, "N=8"], None, "8\n"),
        (&[f], None, "5\n"),
        (&[f, "N=7"], None, "7\n"),
        (&[], Some(DEFINE_N), "5\n"),
        (&["N=2"], Some(DEFINE_N), "2\n"),
    ];
    for (args, stdin, want) in cases {
        let mut c = t.click();
        c.args(args).args(["-h", "c.count"]);
        let o = match stdin {
            Some(s) => run_stdin(&mut c, s),
            None => run(&mut c),
        };
        o.expect_code(0);
        assert_eq!(o.stdout, want, "args {args:?}, stdin {}", stdin.is_some());
    }
    // `-` names standard input explicitly.
    let o = run_stdin(t.click().args(["-", "-h", "c.count"]), DEFINE_N);
    o.expect_code(0);
    assert_eq!(o.stdout, "5\n");
}

#[test]
fn variable_overrides_define_with_the_real_trace() {
    let t = TempDir::new("trace");
    let conf = "define($TRACE /nonexistent.pcap);\n\
                FromDump($TRACE, STOP true) -> c :: Counter -> Discard;\n";
    let f = t.write("trace.click", conf);
    let trace_var = format!("TRACE={TRACE}");
    let o = run(t.click().arg(&f).arg(&trace_var).args(["-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout.trim().parse::<u64>().ok(), Some(TRACE_PACKETS));
    // Without the variable, the define's default is used (and fails).
    let o = run(t.click().arg(&f));
    o.expect_code(1);
    assert!(o.stderr.contains("/nonexistent.pcap"), "{}", o.stderr);
}

#[test]
fn configuration_given_twice_is_a_usage_error() {
    let t = TempDir::new("twice");
    let f = t.write("a.click", COUNT10);
    let o = run(t.click().args(["-e", COUNT10]).arg(&f));
    o.expect_code(1);
    assert!(o.stderr.contains("specified twice"), "{}", o.stderr);
}

#[test]
fn quit_sets_up_but_does_not_run() {
    let t = TempDir::new("quit");
    // An unlimited source: running it would never finish.
    let o = run(t.click().args([
        "-q",
        "-e",
        "InfiniteSource -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]));
    o.expect_code(0);
    assert_eq!(o.stdout, "0\n");
    // Errors are still found.
    let o = run(t.click().args(["-q", "-e", "Idle -> Countr"]));
    o.expect_code(1);
}

#[test]
fn output_writes_the_flat_configuration() {
    let t = TempDir::new("output");
    let f = t.write("n.click", DEFINE_N);
    let flat = run(linerate(&["flatten"]).arg(&f).arg("N=3"));
    flat.expect_code(0);
    assert!(flat.stdout.contains("LIMIT 3"), "{}", flat.stdout);

    let o = run(t.click().args(["-q", "-o", "-"]).arg(&f).arg("N=3"));
    o.expect_code(0);
    assert_eq!(o.stdout, flat.stdout);

    // To a file, while also running: the handler is printed after the run.
    let out = t.join("flat.click");
    let o = run(t
        .click()
        .arg("-o")
        .arg(&out)
        .arg(&f)
        .args(["N=3", "-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "3\n");
    assert_eq!(
        std::fs::read_to_string(&out).ok(),
        Some(flat.stdout.clone())
    );

    // The flat configuration is itself a configuration that runs the same.
    let o = run(t.click().arg(&out).args(["-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "3\n");
}

#[test]
fn exit_handler_sets_the_exit_status() {
    let t = TempDir::new("exit");
    let o = run(t.click().args(["-e", COUNT10, "-x", "c.count"]));
    assert_eq!(o.no_panic().code, Some(10));
    // Boolean values: true is 0, false is 1.
    for (active, code) in [("true", 0), ("false", 1)] {
        let conf = format!("s :: InfiniteSource(ACTIVE {active}) -> Discard");
        let o = run(t
            .click()
            .args(["-q", "-e", &conf, "--exit-handler", "s.active"]));
        assert_eq!(o.no_panic().code, Some(code), "ACTIVE {active}");
    }
    // Values are truncated to 8 bits, as exit(2) does.
    let conf = "InfiniteSource(LIMIT 300, STOP true) -> c :: Counter -> Discard";
    let o = run(t.click().args(["-e", conf, "-x", "c.count"]));
    assert_eq!(o.no_panic().code, Some(300 % 256));
    // A missing handler gives Click's -1 (255), under either name.
    let o = run(t.click().args(["-e", COUNT10, "-x", "c.nothere"]));
    assert_eq!(o.no_panic().code, Some(255), "{}", o.stderr);
    let o = run(&mut linerate(&["click", "-e", COUNT10, "-x", "c.nothere"]));
    assert_eq!(o.no_panic().code, Some(255), "{}", o.stderr);
}

#[test]
fn simulated_time_runs_a_slow_timed_source_at_once() {
    let t = TempDir::new("simtime");
    let dump = t.join("sim.pcap");
    // Three packets 1000 s apart: an hour of wall-clock time without --simtime.
    let conf = format!(
        "TimedSource(1000s, LIMIT 3, STOP true) -> c :: Counter -> ToDump({})",
        dump.display()
    );
    let start = Instant::now();
    let o = run(t.click().args(["--simtime", "-e", &conf, "-h", "c.count"]));
    o.expect_code(0);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(o.stdout, "3\n");
    let recs = pcap_records(&dump).expect("complete pcap");
    assert_eq!(recs.len(), 3);
    // The packets carry the simulated timestamps, 1000 s apart.
    assert_eq!(recs[1].0 - recs[0].0, 1000);
    assert_eq!(recs[2].0 - recs[1].0, 1000);
    assert_eq!((recs[0].1, recs[1].1), (0, 0));
}

#[test]
fn control_port_answers_while_running() {
    let t = TempDir::new("port");
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let mut child = Running::start(
        t.click().args([
            "-p",
            &port.to_string(),
            "-e",
            "InfiniteSource -> c :: Counter -> Discard",
            "-h",
            "c.count",
        ]),
        None,
    );
    let first = wait_for_count(&mut child, &target, "c.count", 1);
    let second = wait_for_count(&mut child, &target, "c.count", first + 1);
    assert!(second > first);
    let o = ctl_read(&target, "c.nothere");
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("c.nothere"), "{}", o.stderr);
    // Stop through the global handler: the run ends and -h is printed.
    ctl_write(&target, ".stop", None).expect_code(0);
    let o = child.finish(Duration::from_secs(20));
    o.expect_code(0);
    let last: u64 = o.stdout.trim().parse().expect("count after the run");
    assert!(last >= second, "{last} < {second}");
}

#[test]
fn unix_socket_answers_while_running_and_sigint_stops() {
    let t = TempDir::new("unix");
    let sock = t.join("ctl.sock");
    let target = sock.to_str().expect("utf-8 path").to_string();
    let mut child = Running::start(
        t.click().args([
            "-u",
            &target,
            "-e",
            "InfiniteSource -> c :: Counter -> Discard",
            "-h",
            "c.count",
        ]),
        None,
    );
    let seen = wait_for_count(&mut child, &target, "c.count", 1);
    let v = ctl_read(&target, "version");
    v.expect_code(0);
    assert_eq!(v.stdout.trim(), env!("CARGO_PKG_VERSION"));
    child.signal(libc::SIGINT);
    let o = child.finish(Duration::from_secs(20));
    o.expect_code(0);
    let last: u64 = o.stdout.trim().parse().expect("count after the run");
    assert!(last >= seen);
    // Click mode prints no summary.
    assert!(!o.stderr.contains("linerate: ran"), "{}", o.stderr);
}

#[test]
fn help_and_version() {
    let t = TempDir::new("help");
    for mut c in [t.click(), linerate(&["click"])] {
        let o = run(c.arg("--help"));
        o.expect_code(0);
        assert!(o.stdout.starts_with("'Click' runs"), "{}", o.stdout);
        assert!(o.stdout.contains("Usage: click [OPTION]... [ROUTERFILE]"));
        assert!(o.stdout.contains("--exit-handler"));
    }
    for flag in ["-v", "--version"] {
        let o = run(t.click().arg(flag));
        o.expect_code(0);
        assert_eq!(
            o.stdout,
            format!("click (linerate) {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn unknown_option_and_missing_argument_are_usage_errors() {
    let t = TempDir::new("usage");
    for args in [
        &["--bogus"][..],
        &["-Z", "x.click"],
        &["-e"],
        &["-p", "notaport"],
    ] {
        let o = run(t.click().args(args));
        o.expect_code(1);
        assert!(o.stdout.is_empty(), "{args:?}: {}", o.stdout);
        assert!(
            o.stderr.contains("Usage: click [OPTION]... [ROUTERFILE]"),
            "{args:?}: {}",
            o.stderr
        );
    }
    let o = run(t.click().arg("--bogus"));
    assert!(o.stderr.contains("'--bogus'"), "{}", o.stderr);
}

#[test]
fn configuration_errors_show_location_and_line() {
    let t = TempDir::new("conferr");
    // A parse-time error (unknown class) ...
    let f = t.write(
        "bad.click",
        "InfiniteSource(LIMIT 10)\n  -> c :: Countr\n  -> Discard;\n",
    );
    let o = run(t.click().arg(&f));
    o.expect_code(1);
    assert!(
        o.stderr.contains(&format!("{}:2:11: error", f.display())),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("  -> c :: Countr\n"), "{}", o.stderr);
    // ... an element configuration error found when building the router ...
    let f = t.write(
        "bad2.click",
        "InfiniteSource(LIMIT 10)\n  -> c :: Counter(FOO 3)\n  -> Discard;\n",
    );
    let o = run(t.click().arg(&f));
    o.expect_code(1);
    assert!(
        o.stderr.contains(&format!("{}:2:6: error", f.display())),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("FOO"), "{}", o.stderr);
    assert!(
        o.stderr.contains("  -> c :: Counter(FOO 3)\n"),
        "{}",
        o.stderr
    );
    // ... a syntax error in an expression ...
    let o = run(t.click().args(["-e", "InfiniteSource(LIMIT 10 -> Discard"]));
    o.expect_code(1);
    assert!(o.stderr.contains("<expr>:1:"), "{}", o.stderr);
    assert!(o.stderr.contains("InfiniteSource(LIMIT 10 -> Discard\n"));
    // ... and a router error in a configuration read from standard input.
    let o = run_stdin(&mut t.click(), "Idle\n  -> q :: Queue;\n");
    o.expect_code(1);
    assert!(o.stderr.contains("<stdin>:2:6: error"), "{}", o.stderr);
    assert!(o.stderr.contains("  -> q :: Queue;\n"), "{}", o.stderr);
}

#[test]
fn missing_file_and_empty_configuration() {
    let t = TempDir::new("missing");
    let missing = t.join("nonexistent.click");
    let o = run(t.click().arg(&missing));
    o.expect_code(1);
    assert!(
        o.stderr.contains(&missing.display().to_string()),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("No such file"), "{}", o.stderr);
    // An empty configuration (stdin) has nothing to run: a warning, status 0.
    let o = run_stdin(&mut t.click(), "// nothing\n");
    o.expect_code(0);
    assert!(o.stderr.contains("no elements"), "{}", o.stderr);
}

#[test]
fn global_handlers_by_bare_name_or_dot() {
    let o = run(&mut linerate(&[
        "run",
        "--no-summary",
        "-q",
        "-e",
        "Idle -> d :: Discard",
        "-h",
        "list",
        "-h",
        ".classes",
    ]));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout.starts_with("list:\n2\nIdle@1\nd\n\n.classes:\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("\nInfiniteSource\n"), "{}", o.stdout);
    let o = run(&mut linerate(&[
        "run",
        "--no-summary",
        "-q",
        "-e",
        "Idle -> Discard",
        "-h",
        "nonesuch",
    ]));
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("no 'nonesuch' handler"), "{}", o.stderr);
}

#[test]
fn closed_stdout_is_not_a_panic() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = linerate(&["elements", "--markdown"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(status.code(), Some(101));
}
