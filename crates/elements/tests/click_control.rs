//! Script and DriverManager through the real router: handler values after
//! the run (Print's text is checked by the testie files, which capture
//! standard error).

mod common;

use common::config;
use linerate_runtime::{Router, RouterOptions};

fn run(text: &str) -> Router {
    let reg = linerate_elements::registry();
    let c = config(&reg, text);
    let mut r = Router::build(&c, &reg, RouterOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    r.run();
    r
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim_end().to_string()
}

#[test]
fn script_writes_handlers_and_stops() {
    let r = run(
        "InfiniteSource(LIMIT 5, STOP false) -> c :: Counter -> Discard;
         Script(wait 20ms, write c.reset, stop);",
    );
    assert_eq!(read(&r, "c.count"), "0");
}

#[test]
fn passive_run_and_helpers() {
    let r = run("s :: Script(TYPE PASSIVE, return $(add $1 $2)); Script(stop);");
    assert_eq!(read(&r, "s.run 3 4"), "7");
    assert_eq!(read(&r, "s.sprintf \"%-3d|\" 5"), "5  |");
    assert_eq!(read(&r, "s.ge 2 2"), "true");
}

#[test]
fn export_makes_a_read_handler() {
    let r = run("s :: Script(export v 42, set w 1, stop);");
    assert_eq!(read(&r, "s.v"), "42");
}

#[test]
fn drivermanager_waits_for_two_stop_requests() {
    let r = run(
        "InfiniteSource(LIMIT 10, STOP true) -> a :: Counter -> Discard;
         TimedSource(5ms, LIMIT 4, STOP true) -> b :: Counter -> Discard;
         DriverManager(wait_stop 2);",
    );
    assert_eq!(read(&r, "a.count"), "10");
    assert_eq!(read(&r, "b.count"), "4");
}

#[test]
fn bad_script_is_rejected() {
    let reg = linerate_elements::registry();
    let c = config(&reg, "Script(frobnicate 3, goto nowhere);");
    let e = Router::build(&c, &reg, RouterOptions::default())
        .err()
        .map(|d| d.to_string())
        .unwrap_or_default();
    assert!(e.contains("syntax error at 'frobnicate'"), "{e}");
    assert!(e.contains("no such label 'nowhere'"), "{e}");
}
