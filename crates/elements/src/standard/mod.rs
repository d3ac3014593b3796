//! Click's standard elements: sources, sinks, queues, counters, tees.

pub mod counter;
pub mod discard;
pub mod drivermanager;
pub mod idle;
pub mod infinitesource;
pub mod message;
pub mod null;
pub mod print;
pub mod queue;
pub mod ratedsource;
pub mod script;
pub mod tee;
pub mod timedsource;
pub mod unqueue;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    counter::CLASS,
    discard::CLASS,
    drivermanager::CLASS,
    idle::CLASS,
    infinitesource::CLASS,
    message::CLASS,
    null::CLASS,
    print::CLASS,
    queue::CLASS,
    ratedsource::CLASS,
    script::CLASS,
    tee::CLASS,
    timedsource::CLASS,
    unqueue::CLASS,
];
