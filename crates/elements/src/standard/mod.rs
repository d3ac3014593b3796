//! Click's standard elements: sources, sinks, queues, counters, tees.

pub mod counter;
pub mod discard;
pub mod idle;
pub mod infinitesource;
pub mod null;
pub mod queue;
pub mod ratedsource;
pub mod tee;
pub mod timedsource;
pub mod unqueue;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    counter::CLASS,
    discard::CLASS,
    idle::CLASS,
    infinitesource::CLASS,
    null::CLASS,
    queue::CLASS,
    ratedsource::CLASS,
    tee::CLASS,
    timedsource::CLASS,
    unqueue::CLASS,
];
