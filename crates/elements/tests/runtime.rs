//! Runtime behaviour exercised through real elements: push and pull paths,
//! the Queue boundary, batches, threads and rings, replicated mode,
//! simulated time, handlers, and the router's configuration checks.

mod common;

use common::{build, config, run};
use linerate_runtime::{Router, RouterOptions};

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    assert!(
        v.ends_with('\n'),
        "{h}: read values end in a newline: {v:?}"
    );
    v.trim_end().to_string()
}

#[test]
fn push_path_counts_every_packet() {
    let r = run(
        "InfiniteSource(LIMIT 1000, STOP true) -> c :: Counter -> d :: Discard;",
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "c.count"), "1000");
    assert_eq!(read(&r, "c.byte_count"), (1000 * 69).to_string());
    assert_eq!(read(&r, "d.count"), "1000");
}

#[test]
fn length_and_burst_shape_packets() {
    let r = run(
        "InfiniteSource(LENGTH 64, LIMIT 100, BURST 7, STOP true) -> c :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "c.count"), "100");
    assert_eq!(read(&r, "c.byte_count"), "6400");
}

#[test]
fn queue_is_the_push_to_pull_boundary() {
    let r = run(
        "s :: InfiniteSource(LIMIT 500, BURST 50, STOP true) -> q :: Queue(10000) -> c :: Counter -> u :: Unqueue(BURST 16) -> d :: Discard;",
        RouterOptions::default(),
    );
    // The source stops the router as soon as it has sent its last packet, so
    // some packets may remain queued (as in Click).
    let queued: u64 = read(&r, "q.length").parse().unwrap();
    let moved: u64 = read(&r, "d.count").parse().unwrap();
    assert_eq!(queued + moved, 500);
    assert_eq!(read(&r, "c.count"), moved.to_string());
    assert_eq!(read(&r, "q.drops"), "0");
}

#[test]
fn full_queue_drops_to_output_1() {
    let r = run(
        "InfiniteSource(LIMIT 100, BURST 100, STOP true) -> q :: Queue(10); q -> Idle; q[1] -> c :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "q.length"), "10");
    assert_eq!(read(&r, "q.drops"), "90");
    assert_eq!(read(&r, "c.count"), "90");
}

#[test]
fn pull_sink_drives_agnostic_chain() {
    // Discard's input is pull here, so Discard runs a task and the agnostic
    // Counter is resolved to pull.
    let r = run(
        "InfiniteSource(LIMIT 300, STOP true) -> Queue -> c :: Counter -> d :: Discard(BURST 5);",
        RouterOptions::default(),
    );
    let d: u64 = read(&r, "d.count").parse().unwrap();
    assert_eq!(read(&r, "c.count"), d.to_string());
    let ports = read(&r, "c.ports");
    assert!(ports.starts_with("1 input\npull\t"), "{ports}");
}

#[test]
fn tee_clones_to_every_output() {
    let r = run(
        "InfiniteSource(LIMIT 64, STOP true) -> t :: Tee(3); t[0] -> a :: Counter -> Discard; t[1] -> b :: Counter -> Discard; t[2] -> c :: Counter -> Discard;",
        RouterOptions::default(),
    );
    for h in ["a.count", "b.count", "c.count"] {
        assert_eq!(read(&r, h), "64");
    }
}

#[test]
fn tee_argument_must_match_outputs() {
    let e = build(
        "InfiniteSource -> t :: Tee(3); t[0] -> Discard; t[1] -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("N is 3, but 2 outputs are connected"), "{e}");
}

#[test]
fn port_and_processing_errors_are_all_reported() {
    let e = build(
        "x :: Counter;\nx2 :: Counter;\nInfiniteSource -> [1]y :: Counter -> Discard;\nq2 :: Queue; Idle -> q2 -> q3 :: Queue -> Discard;\nq4 :: Queue; Idle -> q4 -> Counter -> q5 :: Queue -> Discard; x2 -> x2;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("'x' input 0 unused"), "{e}");
    assert!(e.contains("'x' output 0 unused"), "{e}");
    assert!(e.contains("test.click:3:16: error: 'y' :: Counter has 2 inputs, but Counter takes exactly 1 input"), "{e}");
    assert!(e.contains("'y' input 0 unused"), "{e}");
    assert!(
        e.contains("'q2' pull output 0 connected to 'q3' push input 0"),
        "{e}"
    );
    assert!(
        e.contains("agnostic element 'Counter@") && e.contains("is used as both push and pull"),
        "{e}"
    );
    assert_eq!(e.matches("used as both push and pull").count(), 1, "{e}");
    assert!(
        e.contains("test.click:1:1: error: 'x' input 0 unused"),
        "{e}"
    );
    assert!(!e.contains("'x2' input 0 unused"), "{e}");
}

#[test]
fn push_output_fanout_is_an_error() {
    let e = build(
        "s :: InfiniteSource; s -> Discard; s -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("'s' push output 0 connected to 2 inputs"), "{e}");
}

#[test]
fn bad_arguments_name_the_element() {
    let e = build(
        "InfiniteSource(LIMT 5) -> Queue(CAPACITY x) -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(
        e.contains("unknown keyword 'LIMT' (did you mean 'LIMIT'?)"),
        "{e}"
    );
    assert!(e.contains("CAPACITY: expected"), "{e}");
}

#[test]
fn generic_handlers() {
    let r = build(
        "s :: InfiniteSource(LIMIT 1) -> c :: Counter -> Discard;",
        RouterOptions::default(),
    )
    .unwrap();
    let h = r.handle();
    assert_eq!(h.call("c.class", None).unwrap(), "Counter\n");
    assert_eq!(h.call("s.config", None).unwrap(), "LIMIT 1\n");
    assert_eq!(h.call("c.name", None).unwrap(), "c\n");
    let hs = h.call("c.handlers", None).unwrap();
    assert!(
        hs.contains("count\tr\n") && hs.contains("reset\tw\n"),
        "{hs}"
    );
    assert_eq!(h.call("c.nope", None).unwrap_err(), "no handler 'c.nope'");
    assert_eq!(
        h.call("zz.count", None).unwrap_err(),
        "no element named 'zz'"
    );
    assert_eq!(
        h.call("c.count", Some("1")).unwrap_err(),
        "handler 'c.count' is not writeable"
    );
    h.call("c.reset", Some("")).unwrap();
}

#[test]
fn handlers_work_while_traffic_flows() {
    let mut r = build(
        "InfiniteSource(BURST 64) -> c :: Counter -> Discard;",
        RouterOptions::default(),
    )
    .unwrap();
    let h = r.handle();
    let t = std::thread::spawn(move || {
        let mut last = 0u64;
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let v: u64 = h.call("c.count", None).unwrap().trim().parse().unwrap();
            assert!(v >= last);
            last = v;
        }
        h.call("c.reset", Some("")).unwrap();
        h.stop();
        last
    });
    r.run();
    assert!(t.join().unwrap() > 0);
}

#[test]
fn handler_calls_racing_the_end_of_a_run_are_answered() {
    // A caller that finds the router running posts to a thread's mailbox;
    // if the run ends at that moment the call must still be answered (by
    // the end-of-run drain or directly), never left to time out.
    for _ in 0..40 {
        let mut r = build(
            "InfiniteSource(BURST 64) -> c :: Counter -> Discard;",
            RouterOptions::default(),
        )
        .unwrap();
        let h = r.handle();
        let caller = std::thread::spawn(move || {
            while !h.running() {
                std::thread::yield_now();
            }
            h.stop();
            loop {
                let was_running = h.running();
                let v = h.call("c.count", None);
                assert!(v.is_ok(), "{v:?}");
                if !was_running {
                    return v.unwrap();
                }
            }
        });
        r.run();
        let last = caller.join().unwrap();
        assert_eq!(last, read(&r, "c.count") + "\n", "frozen after the run");
    }
}

#[test]
fn two_threads_through_a_ring_lose_nothing() {
    let r = run(
        "s :: InfiniteSource(LIMIT 200000, STOP true) -> q :: Queue(100000) -> u :: Unqueue -> c :: Counter -> Discard;\nStaticThreadSched(s 0, u 1);",
        RouterOptions { threads: 2, ..Default::default() },
    );
    let c: u64 = read(&r, "c.count").parse().unwrap();
    let q: u64 = read(&r, "q.length").parse().unwrap();
    let drops: u64 = read(&r, "q.drops").parse().unwrap();
    assert_eq!(c + q + drops, 200000);
    let el = r.elements();
    let thread = |n: &str| el.iter().find(|e| e.name == n).unwrap().thread;
    assert_eq!(thread("s"), 0);
    assert_eq!(thread("q"), 1);
    assert_eq!(thread("c"), 1);
}

#[test]
fn replicated_mode_runs_one_graph_per_thread() {
    let r = run(
        "InfiniteSource(LIMIT 100001, STOP true) -> c :: Counter -> Discard;",
        RouterOptions {
            threads: 2,
            replicate: true,
            ..Default::default()
        },
    );
    // Each replica sends its share; handler reads sum over replicas.
    assert_eq!(read(&r, "c.count"), "100001");
}

#[test]
fn pull_paths_cannot_cross_threads() {
    let e = build(
        "u1 :: Unqueue; u2 :: Unqueue; q2 :: Queue; Idle -> q2; q2 -> u1 -> Discard; q2 -> u2 -> Discard;\nStaticThreadSched(u1 0, u2 1);",
        RouterOptions { threads: 2, ..Default::default() },
    )
    .err()
    .unwrap();
    assert!(e.contains("'q2' is pulled from threads 0 and 1"), "{e}");
}

#[test]
fn rated_source_paces_packets() {
    let t = std::time::Instant::now();
    let r = run(
        "RatedSource(RATE 1000, LIMIT 200, STOP true) -> c :: Counter -> Discard;",
        RouterOptions::default(),
    );
    let el = t.elapsed().as_secs_f64();
    assert_eq!(read(&r, "c.count"), "200");
    assert!(
        (0.15..2.0).contains(&el),
        "200 packets at 1000/s took {el} s"
    );
}

#[test]
fn simulated_time_jumps_between_timers() {
    let t = std::time::Instant::now();
    let r = run(
        "RatedSource(RATE 10, LIMIT 50, STOP true) -> a :: Counter -> Discard; TimedSource(1s, LIMIT 3) -> b :: Counter -> Discard;",
        RouterOptions { simtime: Some(1_000_000_000), ..Default::default() },
    );
    // 50 packets at 10/s take 4.9 simulated seconds: TimedSource fires 3 times.
    assert_eq!(read(&r, "a.count"), "50");
    assert_eq!(read(&r, "b.count"), "3");
    assert!(t.elapsed().as_secs_f64() < 2.0);
}

#[test]
fn elements_call_handlers_on_their_thread() {
    use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element};
    // A test element that reads and resets a Counter's handlers each batch;
    // `Blind` does not say it calls handlers, so the Counter upstream of it
    // is still running (busy) when it does.
    struct Peek {
        seen: Vec<String>,
        declared: bool,
    }
    impl Element for Peek {
        fn action(&mut self, b: Batch, ctx: &mut Ctx<'_>) -> Batch {
            match ctx.call_handler("c.count", None) {
                Ok(v) => self.seen.push(v),
                Err(e) => {
                    assert!(
                        e.contains("'c' is busy") && e.contains("calls_handlers"),
                        "{e}"
                    );
                    self.seen.push("busy".into());
                    return b;
                }
            }
            assert_eq!(ctx.call_handler("c.reset", Some("")).unwrap(), "");
            assert!(ctx
                .call_handler("p.count", None)
                .unwrap_err()
                .contains("own handler"));
            assert!(ctx
                .call_handler("zz.count", None)
                .unwrap_err()
                .contains("no element"));
            b
        }
        fn calls_handlers(&self) -> bool {
            self.declared
        }
        fn read_handler(&self, name: &str) -> Option<String> {
            (name == "seen").then(|| self.seen.join(","))
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    fn make(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(Peek {
            seen: vec![],
            declared: true,
        }))
    }
    fn make_blind(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(Peek {
            seen: vec![],
            declared: false,
        }))
    }
    for (class, make, seen, count) in [
        (
            "Peek",
            make as linerate_runtime::element::MakeFn,
            "1\n,1\n,1\n",
            "0",
        ),
        ("Blind", make_blind, "busy,busy,busy\n", "3"),
    ] {
        let reg = registry_with(class, "1/1", "a/a", make);
        let c = config(
            &reg,
            &format!(
                "InfiniteSource(LIMIT 3, BURST 1, STOP true) -> c :: Counter -> p :: {class} -> Discard;"
            ),
        );
        let mut r = Router::build(&c, &reg, RouterOptions::default()).unwrap();
        r.run();
        assert_eq!(r.handle().call("p.seen", None).unwrap(), seen, "{class}");
        assert_eq!(read(&r, "c.count"), count, "{class}");
    }
}

#[test]
fn a_runs_elapsed_time_includes_the_end_of_run_flush() {
    use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element};
    use std::time::Duration;
    /// Takes 50 ms to flush, once (as a flow table exporting its flows).
    struct SlowFlush {
        flushed: bool,
    }
    impl Element for SlowFlush {
        fn action(&mut self, b: Batch, _ctx: &mut Ctx<'_>) -> Batch {
            b
        }
        fn flush(&mut self, _ctx: &mut Ctx<'_>) -> bool {
            if !std::mem::replace(&mut self.flushed, true) {
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    fn make(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(SlowFlush { flushed: false }))
    }
    let reg = registry_with("SlowFlush", "1/1", "a/a", make);
    let c = config(
        &reg,
        "InfiniteSource(LIMIT 10, STOP true) -> SlowFlush -> Discard;",
    );
    // One thread, and two replicas (each flushes on its own thread).
    for replicate in [false, true] {
        let opts = RouterOptions {
            threads: if replicate { 2 } else { 1 },
            replicate,
            ..RouterOptions::default()
        };
        let mut r = Router::build(&c, &reg, opts).unwrap();
        let rep = r.run();
        assert!(
            rep.elapsed >= Duration::from_millis(50),
            "replicate {replicate}: {:?}",
            rep.elapsed
        );
    }
}

/// Runs `config_text` (with the extra test element class `extra`, if any)
/// and returns "name:length" for each batch the `Log` elements received
/// (the first packet's length), in order. One run at a time: the log is
/// shared.
fn dispatch_log(
    config_text: &str,
    extra: Option<(
        &'static str,
        &'static str,
        &'static str,
        linerate_runtime::element::MakeFn,
    )>,
) -> Vec<String> {
    use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element};
    use std::sync::Mutex;
    static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
    static ONE_RUN: Mutex<()> = Mutex::new(());
    /// `StackedLog` says it calls handlers, so pushes into it go through
    /// the work stack.
    struct Log {
        stacked: bool,
    }
    impl Element for Log {
        fn action(&mut self, b: Batch, ctx: &mut Ctx<'_>) -> Batch {
            let len = b.iter().next().map_or(0, |p| p.len());
            LOG.lock().unwrap().push(format!("{}:{len}", ctx.name()));
            b
        }
        fn calls_handlers(&self) -> bool {
            self.stacked
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    fn make(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(Log { stacked: false }))
    }
    fn make_stacked(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(Log { stacked: true }))
    }
    let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
    LOG.lock().unwrap().clear();
    let mut reg = registry_with("Log", "1/1", "a/a", make);
    reg.add(class("StackedLog", "1/1", "a/a", make_stacked));
    if let Some((name, ports, processing, make)) = extra {
        reg.add(class(name, ports, processing, make));
    }
    let c = config(&reg, config_text);
    Router::build(&c, &reg, RouterOptions::default())
        .unwrap()
        .run();
    let log = LOG.lock().unwrap().clone();
    log
}

#[test]
fn a_batch_pushed_to_output_0_is_processed_before_output_1s() {
    // Tee's output 0 leads through two elements, output 1 to one; then the
    // same after a chain of 100 elements, deeper than direct calls go (the
    // rest pass through the work stack, in the same order); and with some
    // of the Logs reached through the work stack.
    let chain = "Null -> ".repeat(100);
    for head in ["", chain.as_str()] {
        for (b, c) in [("Log", "Log"), ("StackedLog", "Log"), ("Log", "StackedLog")] {
            let text = format!(
                "InfiniteSource(LENGTH 60, LIMIT 2, BURST 1, STOP true) -> {head}t :: Tee(2); t[0] -> a :: Log -> b :: {b} -> Discard; t[1] -> c :: {c} -> Discard;"
            );
            assert_eq!(
                dispatch_log(&text, None),
                ["a:60", "b:60", "c:60", "a:60", "b:60", "c:60"],
                "{head:.8} {b} {c}"
            );
        }
    }
}

#[test]
fn a_loop_on_one_thread_delivers_every_batch() {
    use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element};
    /// Sends each batch round its loop (output 1, back to its own input)
    /// three times, then on to output 0.
    struct Around {
        passes: u32,
    }
    impl Element for Around {
        fn push(&mut self, _port: usize, b: Batch, ctx: &mut Ctx<'_>) {
            self.passes += 1;
            ctx.push(usize::from(!self.passes.is_multiple_of(4)), b);
        }
        fn read_handler(&self, name: &str) -> Option<String> {
            (name == "passes").then(|| self.passes.to_string())
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    fn make(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(Around { passes: 0 }))
    }
    let reg = registry_with("Around", "1/2", "h/h", make);
    let c = config(
        &reg,
        "InfiniteSource(LIMIT 5, BURST 1, STOP true) -> a :: Around; a[1] -> a; a[0] -> c :: Counter -> Discard;",
    );
    let mut r = Router::build(&c, &reg, RouterOptions::default()).unwrap();
    r.run();
    assert_eq!(read(&r, "c.count"), "5");
    assert_eq!(read(&r, "a.passes"), "20");
}

#[test]
fn batches_pushed_while_an_element_is_pulled_keep_their_order() {
    use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element};
    /// When pulled, pushes its input's first packet to output 1, the second
    /// to output 2, and returns the rest on output 0.
    struct Peel;
    impl Element for Peel {
        fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
            let mut b = ctx.pull(0, max)?;
            for port in [1, 2] {
                if let Some(p) = b.pop() {
                    ctx.push(port, Batch::single(p));
                }
            }
            (!b.is_empty()).then_some(b)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    fn make(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
        Ok(Box::new(Peel))
    }
    for class in ["Log", "StackedLog"] {
        let log = dispatch_log(
            &format!("InfiniteSource(LENGTH 60, LIMIT 3, BURST 3, STOP true) -> Queue -> p :: Peel -> Discard(BURST 3); p[1] -> x :: {class} -> Discard; p[2] -> y :: {class} -> Discard;"),
            Some(("Peel", "1/3", "l/lh", make)),
        );
        assert_eq!(log, ["x:60", "y:60"], "{class}");
    }
}

/// The element registry with a test element class (see [`class`]).
fn registry_with(
    name: &'static str,
    ports: &'static str,
    processing: &'static str,
    make: linerate_runtime::element::MakeFn,
) -> linerate_runtime::Registry {
    let mut reg = linerate_elements::registry();
    reg.add(class(name, ports, processing, make));
    reg
}

/// A test element class `name` with `ports` and `processing` (Click's
/// codes, e.g. `1/1` and `a/a`) made by `make`.
fn class(
    name: &'static str,
    ports: &'static str,
    processing: &'static str,
    make: linerate_runtime::element::MakeFn,
) -> linerate_runtime::ElementClass {
    linerate_runtime::ElementClass {
        name,
        port_count: ports,
        processing,
        doc: "",
        make,
    }
}
