//! Tables: exact, longest-prefix and ternary matching, and flow caches.

pub(crate) mod cuckoocore;
pub mod cuckoohash;
pub mod flowcache;

use linerate_runtime::ElementClass;

/// Every element class in this category.
pub const CLASSES: &[ElementClass] = &[cuckoohash::CLASS, flowcache::CLASS];
