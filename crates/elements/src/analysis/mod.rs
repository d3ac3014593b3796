//! Click's trace-analysis elements: IP summary dumps, flow aggregation,
//! per-aggregate counting and time filtering.

pub mod aggregatecounter;
pub mod aggregateipflows;
pub mod fromipsummarydump;
pub mod ipsumdump;
pub mod timefilter;
pub mod toipsummarydump;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    aggregatecounter::CLASS,
    aggregateipflows::CLASS,
    fromipsummarydump::CLASS,
    timefilter::CLASS,
    toipsummarydump::CLASS,
];
