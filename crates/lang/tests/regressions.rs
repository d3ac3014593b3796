//! Inputs found by fuzzing (fuzz/regressions/lang_parse/): each must give a
//! clear error quickly, with bounded memory.

mod common;

use common::messages;
use std::time::Instant;

fn quick_messages(text: &str) -> Vec<String> {
    let t = Instant::now();
    let m = messages(text);
    assert!(t.elapsed().as_secs_f64() < 2.0, "took {:?}", t.elapsed());
    m
}

#[test]
fn self_referential_define_is_an_error_not_a_blowup() {
    let m = quick_messages("define($a $a$a$a$a$a$a$a$a); Idle -> Queue($a) -> Discard;");
    assert!(
        m.iter().any(|x| x == "variable '$a' refers to itself"),
        "{m:?}"
    );
}

#[test]
fn exponential_expansion_is_capped() {
    // Each variable repeats the previous one eight times: 8^9 copies of 8
    // bytes if nothing stopped it.
    let mut defs = vec!["$v0 xxxxxxxx".to_string()];
    for i in 1..10 {
        defs.push(format!("$v{i} {}", format!("$v{}", i - 1).repeat(8)));
    }
    let text = format!(
        "define({}); Idle -> Queue($v9) -> Discard;",
        defs.join(", ")
    );
    let m = quick_messages(&text);
    assert!(
        m.iter()
            .any(|x| x.starts_with("configuration too large after variable expansion")),
        "{m:?}"
    );
}

#[test]
fn fuzz_regression_files_parse_quickly() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/lang_parse");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for f in rd.flatten() {
        let text = String::from_utf8_lossy(&std::fs::read(f.path()).unwrap()).into_owned();
        let t = Instant::now();
        let _ = common::parse_vars(&text, &[("X", "1")]);
        assert!(
            t.elapsed().as_secs_f64() < 2.0,
            "{}: took {:?}",
            f.path().display(),
            t.elapsed()
        );
    }
}
