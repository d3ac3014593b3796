//! Click's standard elements: sources, sinks, queues, counters, tees.

pub mod align;
pub mod alignmentinfo;
pub mod bandwidthratedsplitter;
pub mod bandwidthratedunqueue;
pub mod checklength;
pub mod checkpaint;
pub mod counter;
pub mod discard;
pub mod drivermanager;
pub mod frontdropqueue;
pub mod hashswitch;
pub mod hub;
pub mod idle;
pub mod infinitesource;
pub mod message;
pub mod null;
pub mod pad;
pub mod paint;
pub mod paintswitch;
pub mod painttee;
pub mod print;
pub mod pullswitch;
pub mod pulltee;
pub mod queue;
pub mod ratedsource;
pub mod ratedsplitter;
pub mod ratedunqueue;
pub mod reorderbuffer;
pub mod resize;
pub mod roundrobinswitch;
pub mod script;
pub mod settimestamp;
pub mod shaper;
pub mod simplequeue;
pub mod staticswitch;
pub mod strideswitch;
pub mod strip;
pub mod striptonetworkheader;
pub mod switch;
pub mod tee;
pub mod timedsource;
pub mod truncate;
pub mod unqueue;
pub mod unstrip;

mod common;
pub(crate) use common::Demux;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    align::CLASS,
    alignmentinfo::CLASS,
    bandwidthratedsplitter::CLASS,
    bandwidthratedunqueue::CLASS,
    checklength::CLASS,
    checkpaint::CLASS,
    counter::CLASS,
    discard::CLASS,
    drivermanager::CLASS,
    frontdropqueue::CLASS,
    hashswitch::CLASS,
    hub::CLASS,
    idle::CLASS,
    infinitesource::CLASS,
    message::CLASS,
    null::CLASS,
    pad::CLASS,
    paint::CLASS,
    paintswitch::CLASS,
    painttee::CLASS,
    print::CLASS,
    pullswitch::CLASS,
    pulltee::CLASS,
    queue::CLASS,
    ratedsource::CLASS,
    ratedsplitter::CLASS,
    ratedunqueue::CLASS,
    reorderbuffer::CLASS,
    resize::CLASS,
    roundrobinswitch::CLASS,
    script::CLASS,
    settimestamp::CLASS,
    shaper::CLASS,
    simplequeue::CLASS,
    staticswitch::CLASS,
    strideswitch::CLASS,
    strip::CLASS,
    striptonetworkheader::CLASS,
    switch::CLASS,
    tee::CLASS,
    timedsource::CLASS,
    truncate::CLASS,
    unqueue::CLASS,
    unstrip::CLASS,
];
