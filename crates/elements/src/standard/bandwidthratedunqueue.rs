//! Pulls packets at a given bandwidth and pushes them out.
//!
//! # Synopsis
//! `BandwidthRatedUnqueue(RATE [, KEYWORDS])`
//!
//! # Ports
//! One pull input, one push output. BandwidthRatedUnqueue has a task.
//!
//! # Arguments
//! - `RATE` (bandwidth, mandatory): e.g. `10Mbps`, `1MBps`; a bare number
//!   is bytes per second.
//! - `BURST_DURATION` (time): the token bucket holds RATE × BURST_DURATION
//!   bytes (default 20 ms worth), plus 131072 bytes of room for a large
//!   packet, as in Click.
//! - `BURST_BYTES` (integer): alternatively, the bucket size in bytes.
//!
//! # Handlers
//! - `rate` (read/write): the rate, printed as Click prints bandwidths
//!   (`8kbps`, `10Mbps`...).
//! - `active` (read/write): whether the task runs.
//! - `count` (read): packets moved.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 100) -> Queue -> BandwidthRatedUnqueue(1Mbps) -> Discard;
//! ```
//!
//! # Implementation
//! Click's token bucket in bytes, starting full: a packet may be pulled
//! while the bucket holds the 131072-byte threshold, and costs its length.
//! Up to 64 packets leave per task run as one batch. When the bucket is
//! below the threshold the element sets its timer for when it will not be,
//! so simulated time jumps straight there.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `BandwidthRatedUnqueue` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "BandwidthRatedUnqueue",
    port_count: "1/1",
    processing: "l/h",
    doc: element_doc!("standard/bandwidthratedunqueue"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    super::ratedunqueue::make_rated(ctx, true)
}
