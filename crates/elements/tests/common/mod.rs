//! Helpers shared by the element tests: parse a configuration with the full
//! element registry, build a router, run it.
#![allow(dead_code)] // each test binary uses its own subset

use linerate_lang::{parse_str, Config, ParseOptions};
use linerate_runtime::{Registry, Router, RouterOptions};

/// Parse `text` (as `test.click`) against `reg`, panicking on errors.
pub fn config(reg: &Registry, text: &str) -> Config {
    let opts = ParseOptions {
        vars: vec![],
        catalog: reg,
        clickpath: vec![],
    };
    parse_str(text, "test.click", &opts).unwrap_or_else(|e| panic!("parse error: {e}"))
}

/// Build a router from `text` with the full registry; errors as text.
pub fn build(text: &str, opts: RouterOptions) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let c = config(&reg, text);
    Router::build(&c, &reg, opts).map_err(|d| d.to_string())
}

/// Build and run a router to completion.
pub fn run(text: &str, opts: RouterOptions) -> Router {
    let mut r = build(text, opts).unwrap_or_else(|e| panic!("{e}"));
    r.run();
    r
}

/// Run `head` (a configuration ending in an element declared as `name`),
/// each of `name`'s `n` outputs into a `Counter` then `Discard`; the
/// router and the packet count of every output.
pub fn run_outputs(head: &str, name: &str, n: usize) -> (Router, Vec<String>) {
    let mut text = format!("{head};\n");
    for k in 0..n {
        text.push_str(&format!("{name}[{k}] -> c{k} :: Counter -> Discard;\n"));
    }
    let r = run(&text, RouterOptions::default());
    let counts = (0..n).map(|k| read(&r, &format!("c{k}.count"))).collect();
    (r, counts)
}

/// Read handler `h` (`element.handler`) of `r`, without the final newline.
pub fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.strip_suffix('\n').unwrap_or(&v).to_string()
}
