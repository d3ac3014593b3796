//! Lookup tables (`tables`): longest-prefix match and ternary matching,
//! with batched, prefetching lookups and updates while traffic flows.

pub mod hashtcam;
pub mod lpm;
pub mod lpmtable;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[hashtcam::CLASS, lpm::CLASS];
