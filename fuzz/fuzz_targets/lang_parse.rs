//! Fuzz target: the Click language front end and router construction.
//!
//! Arbitrary bytes, read as UTF-8 (lossy), go through
//! `linerate_lang::parse_str`; a configuration that parses is printed back
//! (`to_click`, `to_dot`) and built into a `Router` against the full element
//! registry. None of these may panic. The router is never run: a built
//! router with sources would run forever.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use linerate_lang::ParseOptions;
use linerate_runtime::{Registry, Router};

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(linerate_elements::registry)
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let registry = registry();
    let opts = ParseOptions {
        vars: vec![("X".into(), "1".into())],
        catalog: registry,
        clickpath: vec![],
    };
    let Ok(config) = linerate_lang::parse_str(&text, "fuzz.click", &opts) else {
        return;
    };
    std::hint::black_box(config.to_click());
    std::hint::black_box(config.to_dot());
    // Errors are expected for most inputs; only a panic is a finding.
    let _ = std::hint::black_box(Router::build(&config, registry, Default::default()));
});
