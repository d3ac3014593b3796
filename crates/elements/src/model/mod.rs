//! Elements for the performance model (`linerate model`): a synthetic
//! parse-and-lookup workload and an in-memory replay source.

pub mod memoryreplay;
pub mod parsesteps;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[memoryreplay::CLASS, parsesteps::CLASS];
