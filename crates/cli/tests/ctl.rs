//! `linerate run`: the end-of-run summary, threads and replication,
//! handlers and variables, and talking to a running router through
//! `--ctl` (Unix socket), `--http`, `.stop` and SIGINT.

mod common;

use common::*;
use std::time::Duration;

/// The summary line of the element labelled `label` (e.g. `c (Counter)`):
/// (`source` or `sink`, packets).
fn summary_line(stderr: &str, label: &str) -> Option<(String, u64)> {
    stderr.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let kind = w.next()?.to_string();
        let rest = l.trim_start().strip_prefix(&kind)?.trim_start();
        let after = rest.strip_prefix(label)?;
        let n = after.split_whitespace().next()?.parse().ok()?;
        Some((kind, n))
    })
}

#[test]
fn summary_reports_sources_sinks_and_no_drops() {
    let conf = format!("src :: FromDump({TRACE}, STOP true) -> c :: Counter -> d :: Discard");
    let o = run(&mut linerate(&["run", "-e", &conf, "-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, format!("{TRACE_PACKETS}\n"));
    assert!(o.stderr.starts_with("linerate: ran "), "{}", o.stderr);
    assert_eq!(
        summary_line(&o.stderr, "src (FromDump)"),
        Some(("source".into(), TRACE_PACKETS)),
        "{}",
        o.stderr
    );
    assert_eq!(
        summary_line(&o.stderr, "d (Discard)"),
        Some(("sink".into(), TRACE_PACKETS)),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("  drops: none\n"), "{}", o.stderr);
}

#[test]
fn summary_reports_drops_by_element() {
    // The source outruns a 10-packet queue drained 4 packets at a time.
    let conf = "InfiniteSource(LIMIT 100, STOP true) -> q :: Queue(10) \
                -> Unqueue(BURST 4) -> d :: Discard";
    let o = run(&mut linerate(&["run", "-e", conf, "-h", "q.drops"]));
    o.expect_code(0);
    let dropped: u64 = o.stdout.trim().parse().expect("q.drops");
    assert!(dropped > 0, "{}", o.stderr);
    let line = format!("  drops  q (Queue): {dropped} ");
    assert!(o.stderr.contains(&line), "{line:?} in\n{}", o.stderr);
    assert!(!o.stderr.contains("drops: none"), "{}", o.stderr);
    let (kind, sunk) = summary_line(&o.stderr, "d (Discard)").expect("sink line");
    assert_eq!(kind, "sink");
    assert!(sunk + dropped <= 100, "{}", o.stderr);
}

#[test]
fn summary_lists_bad_packets_sent_to_an_error_output_apart_from_drops() {
    // The trace's 743 non-IP frames fail L4Parser, then CheckIPHeader. An
    // element whose output 1 is connected sends them there: the summary
    // lists them as errors to output 1, not as drops; without output 1
    // they are drops.
    for connected in [true, false] {
        let tail = if connected {
            "p[1] -> c :: CheckIPHeader(14) -> Discard; c[1] -> Discard"
        } else {
            "p[1] -> c :: CheckIPHeader(14) -> Discard"
        };
        let conf = format!("FromDump({TRACE}, STOP true) -> p :: L4Parser -> Discard; {tail}");
        let o = run(&mut linerate(&["run", "-e", &conf, "-h", "p.not_ip"]));
        o.expect_code(0);
        let n: u64 = o.stdout.trim().parse().expect("p.not_ip");
        assert_eq!(n, 743, "{}", o.stderr);
        let p_errors = format!("  errors p (L4Parser) to output 1: {n} not_ip\n");
        let c_errors = format!("  errors c (CheckIPHeader) to output 1: {n} bad IP version\n");
        let c_drops = format!("  drops  c (CheckIPHeader): {n} bad IP version\n");
        assert!(o.stderr.contains(&p_errors), "{}", o.stderr);
        assert!(!o.stderr.contains("drops  p (L4Parser)"), "{}", o.stderr);
        assert_eq!(o.stderr.contains(&c_errors), connected, "{}", o.stderr);
        assert_eq!(o.stderr.contains(&c_drops), !connected, "{}", o.stderr);
        assert_eq!(o.stderr.contains("drops: none"), connected, "{}", o.stderr);
    }
}

#[test]
fn summary_reports_flow_meter_counts() {
    // 10 packets over 2 flows: the table meters 10 packets into 2
    // microflows, flushed at the end of the run.
    let conf = "MemoryReplay(PACKETS 2, LIMIT 10, STOP true) -> MarkIPHeader(14) \
                -> fast :: MicroflowTable -> agg :: FlowAggregator -> Discard";
    let o = run(&mut linerate(&["run", "-e", conf]));
    o.expect_code(0);
    let want =
        "  stats  fast (MicroflowTable): 10 packets, 2 microflows (5.00 packets per microflow)\n";
    assert!(o.stderr.contains(want), "{want:?} in\n{}", o.stderr);
    let want = "  stats  agg (FlowAggregator): 2 microflows, 2 flows, 2 records\n";
    assert!(o.stderr.contains(want), "{want:?} in\n{}", o.stderr);
}

#[test]
fn no_summary_handlers_and_variables() {
    let t = TempDir::new("nosummary");
    let f = t.write(
        "n.click",
        "define($N 5);\nInfiniteSource(LIMIT $N, STOP true) -> c :: Counter -> d :: Discard;\n",
    );
    let o = run(linerate(&["run", "--no-summary"])
        .arg(&f)
        .args(["N=9", "-h", "c.count", "-h", "d.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "c.count:\n9\n\nd.count:\n9\n\n");
    assert_eq!(o.stderr, "");
    // The default, with the summary.
    let o = run(linerate(&["run"]).arg(&f).args(["-h", "c.count"]));
    o.expect_code(0);
    assert_eq!(o.stdout, "5\n");
    assert!(o.stderr.contains("linerate: ran"), "{}", o.stderr);
    // No configuration at all.
    let o = run(&mut linerate(&["run"]));
    o.expect_code(1);
    assert!(o.stderr.contains("no configuration"), "{}", o.stderr);
}

#[test]
fn two_threads_with_static_thread_sched_deliver_every_packet() {
    let t = TempDir::new("threads");
    let sock = t.join("ctl.sock");
    let target = sock.to_str().expect("utf-8 path").to_string();
    // No STOP: the run goes on until every packet crossed to thread 1.
    let conf = format!(
        "src :: FromDump({TRACE}) -> q :: Queue(100000) -> uq :: Unqueue \
         -> c :: Counter -> Discard;\nStaticThreadSched(src 0, uq 1);"
    );
    let mut child = Running::start(
        linerate(&["run", "--threads", "2", "--ctl", &target, "-e", &conf])
            .args(["-h", "c.count", "-h", "q.drops", "-h", "uq.count"]),
        None,
    );
    wait_for_count(&mut child, &target, "c.count", TRACE_PACKETS);
    ctl_write(&target, ".stop", None).expect_code(0);
    let o = child.finish(Duration::from_secs(20));
    o.expect_code(0);
    assert_eq!(
        o.stdout,
        format!("c.count:\n{TRACE_PACKETS}\n\nq.drops:\n0\n\nuq.count:\n{TRACE_PACKETS}\n\n")
    );
    assert!(o.stderr.contains("drops: none"), "{}", o.stderr);
}

#[test]
fn replicated_runs_split_the_work_and_sum_the_counts() {
    let conf = format!("FromDump({TRACE}, STOP true) -> c :: Counter -> Discard");
    let o = run(&mut linerate(&[
        "run",
        "--threads",
        "2",
        "--replicate",
        "-e",
        &conf,
        "-h",
        "c.count",
    ]));
    o.expect_code(0);
    assert_eq!(o.stdout, format!("{TRACE_PACKETS}\n"));
    // Each replica sends its share of LIMIT.
    let o = run(&mut linerate(&[
        "run",
        "-j",
        "2",
        "--replicate",
        "-e",
        "s :: InfiniteSource(LIMIT 1000, STOP true) -> c :: Counter -> Discard",
        "-h",
        "c.count",
        "-h",
        "s.count",
    ]));
    o.expect_code(0);
    assert_eq!(o.stdout, "c.count:\n1000\n\ns.count:\n1000\n\n");
}

#[test]
fn ctl_reads_and_writes_a_long_run_then_stops_it() {
    let t = TempDir::new("ctlrw");
    let sock = t.join("ctl.sock");
    let target = sock.to_str().expect("utf-8 path").to_string();
    let mut child = Running::start(
        &mut linerate(&[
            "run",
            "--ctl",
            &target,
            "-e",
            "s :: InfiniteSource -> c :: Counter -> Discard",
        ]),
        None,
    );
    wait_for_count(&mut child, &target, "c.count", 1);
    // Pause the source through a write handler: the count stops moving.
    ctl_write(&target, "s.active", Some("false")).expect_code(0);
    let a = ctl_read(&target, "s.active");
    a.expect_code(0);
    assert_eq!(a.stdout.trim(), "false");
    std::thread::sleep(Duration::from_millis(100));
    let paused = ctl_number(&target, "c.count").expect("c.count");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(ctl_number(&target, "c.count"), Some(paused));
    // Resume: it moves again.
    ctl_write(&target, "s.active", Some("true")).expect_code(0);
    wait_for_count(&mut child, &target, "c.count", paused + 1);
    // Errors are reported with status 1.
    let o = ctl_read(&target, "nobody.count");
    assert_eq!(o.no_panic().code, Some(1));
    let o = ctl_write(&target, "c.count", Some("3"));
    assert_eq!(o.no_panic().code, Some(1), "count is read-only");
    assert!(child.alive());
    ctl_write(&target, ".stop", None).expect_code(0);
    let o = child.finish(Duration::from_secs(20));
    o.expect_code(0);
    let (kind, n) = summary_line(&o.stderr, "Discard@3 (Discard)").expect("summary");
    assert_eq!(kind, "sink");
    assert!(n > paused, "{}", o.stderr);
    // The server is gone with the run.
    let o = ctl_read(&target, "c.count");
    assert_eq!(o.no_panic().code, Some(1));
}

#[test]
fn sigint_ends_cleanly_with_a_complete_dump() {
    let t = TempDir::new("sigint");
    let sock = t.join("ctl.sock");
    let target = sock.to_str().expect("utf-8 path").to_string();
    let dump = t.join("out.pcap");
    let conf = format!(
        "RatedSource(RATE 40000, LENGTH 100) -> c :: Counter -> t :: ToDump({})",
        dump.display()
    );
    let mut child = Running::start(
        &mut linerate(&["run", "--ctl", &target, "-e", &conf, "-h", "t.count"]),
        None,
    );
    // Enough packets for several buffer flushes and a partial buffer.
    wait_for_count(&mut child, &target, "t.count", 5000);
    child.signal(libc::SIGINT);
    let o = child.finish(Duration::from_secs(20));
    o.expect_code(0);
    assert!(o.stderr.contains("linerate: ran"), "{}", o.stderr);
    let written: u64 = o.stdout.trim().parse().expect("t.count");
    assert!(written >= 5000);
    let recs = pcap_records(&dump).expect("complete pcap");
    assert_eq!(recs.len() as u64, written);
    assert!(recs.iter().all(|r| r.2 == 100 && r.3 == 100));
    // linerate reads it back whole.
    let conf = format!(
        "FromDump({}, STOP true) -> c :: Counter -> Discard",
        dump.display()
    );
    let o = run(&mut linerate(&[
        "run",
        "--no-summary",
        "-e",
        &conf,
        "-h",
        "c.count",
    ]));
    o.expect_code(0);
    assert_eq!(o.stdout, format!("{written}\n"));
    assert_eq!(o.stderr, "");
}

#[test]
fn sigint_after_the_real_trace_flushes_every_record() {
    let t = TempDir::new("sigtrace");
    let sock = t.join("ctl.sock");
    let target = sock.to_str().expect("utf-8 path").to_string();
    let dump = t.join("copy.pcap");
    // No STOP: the router idles after the file until interrupted.
    let conf = format!(
        "FromDump({TRACE}) -> t :: ToDump({}, SNAPLEN 65535)",
        dump.display()
    );
    let mut child = Running::start(
        &mut linerate(&["run", "--ctl", &target, "-e", &conf, "-h", "t.count"]),
        None,
    );
    wait_for_count(&mut child, &target, "t.count", TRACE_PACKETS);
    child.signal(libc::SIGINT);
    let o = child.finish(Duration::from_secs(20));
    o.expect_code(0);
    assert_eq!(o.stdout, format!("{TRACE_PACKETS}\n"));
    let copy = pcap_records(&dump).expect("complete pcap");
    let orig = pcap_records(std::path::Path::new(TRACE)).expect("trace");
    assert_eq!(copy.len() as u64, TRACE_PACKETS);
    assert_eq!(copy, orig, "record headers differ from the trace");
}

/// SIGINT and SIGTERM while the flow tables hold every flow of the trace
/// (no STOP, no timeouts): the end-of-run flush exports them all.
#[test]
fn a_signal_flushes_every_flow_record() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let t = TempDir::new("sigflows");
        let sock = t.join("ctl.sock");
        let target = sock.to_str().expect("utf-8 path").to_string();
        let csv = t.join("flows.csv");
        let conf = format!(
            "FromDump({TRACE}) -> p :: L4Parser -> mt :: MicroflowTable(TABLE 1MB)
             -> FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false) -> FlowCSV({}, HEADER false);
             p[1] -> mt;",
            csv.display()
        );
        let mut child =
            Running::start(&mut linerate(&["run", "--ctl", &target, "-e", &conf]), None);
        // Every IP packet metered, every flow still held.
        wait_for_count(&mut child, &target, "mt.packets", 62_038);
        child.signal(sig);
        let o = child.finish(Duration::from_secs(20));
        o.expect_code(0);
        let text = std::fs::read_to_string(&csv).expect("flows.csv");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 11_978, "signal {sig}");
        // Every record's packets (the tenth column) add up to the trace's.
        let packets: u64 = lines
            .iter()
            .map(|l| {
                l.split(',')
                    .nth(9)
                    .and_then(|v| v.parse::<u64>().ok())
                    .expect("packets")
            })
            .sum();
        assert_eq!(packets, 62_038, "signal {sig}");
    }
}

#[test]
fn http_serves_metrics_and_handler_json() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Running::start(
        &mut linerate(&[
            "run",
            "--http",
            &addr,
            "-e",
            "InfiniteSource -> c :: Counter -> Discard",
        ]),
        None,
    );
    let prefix = "linerate_count_total{element=\"c\",class=\"Counter\"} ";
    let value = poll(Duration::from_secs(20), || {
        assert!(child.alive(), "linerate exited early");
        let (code, body) = http_get(port, "/metrics").ok()?;
        assert_eq!(code, 200, "{body}");
        let line = body.lines().find(|l| l.starts_with(prefix))?;
        line[prefix.len()..]
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
    })
    .expect("metrics with a positive count for c");
    assert!(value > 0);

    let (code, body) = http_get(port, "/handlers").expect("GET /handlers");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let els = v["elements"].as_array().expect("elements array");
    let c = els
        .iter()
        .find(|e| e["name"] == "c")
        .expect("element c listed");
    assert_eq!(c["class"], "Counter");
    let hs = c["handlers"].as_array().expect("handlers array");
    assert!(hs
        .iter()
        .any(|h| h["name"] == "count" && h["read"] == true && h["write"] == false));

    child.signal(libc::SIGINT);
    child.finish(Duration::from_secs(20)).expect_code(0);
}
