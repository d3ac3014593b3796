//! Splits a packet stream by bandwidth: conforming packets to output 0, the
//! excess to output 1.
//!
//! # Synopsis
//! `BandwidthRatedSplitter(RATE [, KEYWORDS])`
//!
//! # Ports
//! One push input; two push outputs.
//!
//! # Arguments
//! - `RATE` (bandwidth, mandatory): e.g. `10Mbps`, `1MBps`; a bare number
//!   is bytes per second.
//! - `BURST_DURATION` (time): the token bucket holds RATE × BURST_DURATION
//!   bytes (default 20 ms worth), plus 131072 bytes, as in Click.
//! - `BURST_BYTES` (integer): alternatively, the bucket size in bytes.
//!
//! # Handlers
//! - `rate` (read/write): the rate, printed as Click prints bandwidths.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> bs :: BandwidthRatedSplitter(1Mbps);
//! bs[0] -> Discard; bs[1] -> Discard;
//! ```
//!
//! # Implementation
//! Click's token bucket in bytes, starting full and refilled once per batch:
//! a packet goes to output 0 if the bucket holds its length (which is then
//! removed), otherwise to output 1. The batch is split in one pass keeping
//! order.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `BandwidthRatedSplitter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "BandwidthRatedSplitter",
    port_count: "1/2",
    processing: "h/h",
    doc: element_doc!("standard/bandwidthratedsplitter"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    super::ratedsplitter::make_splitter(ctx, true)
}
