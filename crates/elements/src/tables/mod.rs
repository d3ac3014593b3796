//! Tables: exact (cuckoo hash), longest-prefix and ternary matching, and
//! flow caches, with batched, prefetching lookups and updates while
//! traffic flows.

pub(crate) mod cuckoocore;
pub mod cuckoohash;
pub mod flowcache;
pub mod hashtcam;
pub(crate) mod huge;
pub mod lpm;
pub mod lpmtable;

use linerate_runtime::ElementClass;

/// Every element class in this category.
pub const CLASSES: &[ElementClass] = &[
    cuckoohash::CLASS,
    flowcache::CLASS,
    hashtcam::CLASS,
    lpm::CLASS,
];
