//! User-level I/O elements: trace files.

pub mod fromdump;
pub mod todump;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[fromdump::CLASS, todump::CLASS];
