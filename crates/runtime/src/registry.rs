//! The table of element classes a router can instantiate.

use crate::element::ElementClass;
use std::collections::BTreeMap;

/// Capabilities linerate provides to `require(...)`.
pub const CAPABILITIES: &[&str] = &[
    "linerate",
    "userlevel",
    "batch",
    "int64",
    "ip6",
    "pcap",
    "multithread",
];

/// Element classes by name.
#[derive(Default, Clone)]
pub struct Registry {
    classes: BTreeMap<&'static str, ElementClass>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Add (or replace) a class.
    pub fn add(&mut self, class: ElementClass) {
        self.classes.insert(class.name, class);
    }

    /// Add several classes.
    pub fn extend(&mut self, classes: &[ElementClass]) {
        for c in classes {
            self.add(*c);
        }
    }

    /// Look a class up by name.
    pub fn get(&self, name: &str) -> Option<&ElementClass> {
        self.classes.get(name)
    }

    /// All classes, sorted by name.
    pub fn classes(&self) -> impl Iterator<Item = &ElementClass> {
        self.classes.values()
    }
}

impl linerate_lang::ClassCatalog for Registry {
    fn is_primitive(&self, class: &str) -> bool {
        self.classes.contains_key(class)
    }
    fn class_names(&self) -> Vec<String> {
        self.classes.keys().map(|s| s.to_string()).collect()
    }
    fn provides(&self, capability: &str) -> bool {
        CAPABILITIES.contains(&capability) || self.classes.contains_key(capability)
    }
}
