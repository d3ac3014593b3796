//! Shared helpers for the integration tests.
#![allow(dead_code)]

use linerate_lang::{parse_str, Config, Diagnostics, ParseOptions, SimpleCatalog};

/// The primitive classes the tests use.
pub fn catalog() -> SimpleCatalog {
    let mut c = SimpleCatalog::new([
        "FromDump",
        "Classifier",
        "Strip",
        "CheckIPHeader",
        "Counter",
        "Discard",
        "Queue",
        "BandwidthRatedUnqueue",
        "InfiniteSource",
        "RatedSource",
        "IPClassifier",
        "Paint",
        "Unstrip",
        "ToDump",
        "Idle",
        "Tee",
        "Print",
        "Script",
        "Unqueue",
        "RoundRobinSwitch",
        "PaintSwitch",
        "SimpleQueue",
    ]);
    c.capabilities.push("userlevel".into());
    c
}

/// Parses `text` as `conf.click` with command-line `vars`.
pub fn parse_vars(text: &str, vars: &[(&str, &str)]) -> Result<Config, Diagnostics> {
    let cat = catalog();
    let mut o = ParseOptions::new(&cat);
    o.vars = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    parse_str(text, "conf.click", &o)
}

/// Parses `text`; panics with the diagnostics if it has errors.
pub fn parse(text: &str) -> Config {
    match parse_vars(text, &[]) {
        Ok(c) => c,
        Err(d) => panic!("unexpected errors:\n{d}"),
    }
}

/// The flattened Click text of `text`.
pub fn flat(text: &str) -> String {
    parse(text).to_click()
}

/// The diagnostics of a configuration that must fail.
pub fn errors(text: &str) -> Diagnostics {
    match parse_vars(text, &[]) {
        Ok(c) => panic!("expected errors, got:\n{}", c.to_click()),
        Err(d) => d,
    }
}

/// The messages of a configuration that must fail.
pub fn messages(text: &str) -> Vec<String> {
    errors(text).messages()
}

/// Connections as `from[port] -> [port]to` strings, by element name.
pub fn conns(c: &Config) -> Vec<String> {
    c.connections
        .iter()
        .map(|k| {
            format!(
                "{}[{}] -> [{}]{}",
                c.elements[k.from].name, k.from_port, k.to_port, c.elements[k.to].name
            )
        })
        .collect()
}
