//! Decrements the IP time-to-live; sends expired packets to output 1.
//!
//! # Synopsis
//! `DecIPTTL([KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0; optional push output 1 for
//! packets whose TTL was 1 or 0 (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `ACTIVE` (boolean, default true): if false, pass packets unchanged.
//! - `MULTICAST` (boolean, default true): if false, do not decrement the
//!   TTL of multicast packets (destination in 224.0.0.0/4).
//!
//! Expects packets with an IP network header annotation (CheckIPHeader,
//! MarkIPHeader). Packets without one, or whose header is shorter than 20
//! bytes, are dropped and counted (`no IP header`; Click asserts instead).
//!
//! # Handlers
//! - `drops` (read): packets sent to output 1 because their TTL expired.
//! - `active` (read/write).
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> dt :: DecIPTTL -> ...;
//! dt[1] -> ICMPError(18.26.4.24, timeexceeded) -> ...;
//! ```
//!
//! # Implementation
//! One pass over the batch. The checksum is updated incrementally (RFC
//! 1624, `linerate_wire::checksum::update_u16` on the TTL/protocol word),
//! which yields exactly the bytes of Click's update. A packet that is a view
//! of a trace file or shared with a clone is copied into its own buffer
//! first (no heap allocation).

use super::util::{be16, nh_offset};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use linerate_wire::checksum;
use std::any::Any;

/// The `DecIPTTL` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "DecIPTTL",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/decipttl"),
    make,
};

struct DecIPTTL {
    active: bool,
    multicast: bool,
    has_out1: bool,
    drops: u64,
    no_header: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let active = a.read_or("ACTIVE", true);
    let multicast = a.read_or("MULTICAST", true);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(DecIPTTL {
        active,
        multicast,
        has_out1: ctx.noutputs() > 1,
        drops: 0,
        no_header: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("drops"),
    HandlerSpec::read_write("active"),
];

// Verdicts for one packet.
const PASS: u8 = 0;
const EXPIRED: u8 = 1;
const NO_HEADER: u8 = 2;

impl Element for DecIPTTL {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        if !self.active {
            return batch;
        }
        let multicast = self.multicast;
        let mut expired = 0u64;
        let mut no_header = 0u64;
        let bad = super::util::partition(&mut batch, |p| {
            let verdict = match nh_offset(p) {
                Some(nh) if p.len() - nh >= 20 => {
                    let ip = &p.data()[nh..];
                    if !multicast && ip[16] & 0xf0 == 0xe0 {
                        PASS
                    } else if ip[8] <= 1 {
                        EXPIRED
                    } else {
                        let ip = &mut p.data_mut()[nh..];
                        let old = be16(ip, 8);
                        let new = old - 0x100;
                        ip[8] -= 1;
                        let sum = checksum::update_u16(be16(ip, 10), old, new);
                        ip[10..12].copy_from_slice(&sum.to_be_bytes());
                        PASS
                    }
                }
                _ => NO_HEADER,
            };
            match verdict {
                PASS => false,
                EXPIRED => {
                    expired += 1;
                    true
                }
                _ => {
                    no_header += 1;
                    true
                }
            }
        });
        self.drops += expired;
        self.no_header += no_header;
        if let Some(mut out) = bad {
            if no_header > 0 {
                // Those packets were not changed: find them again.
                out.retain(|p| nh_offset(p).is_some_and(|nh| p.len() - nh >= 20));
            }
            if self.has_out1 {
                ctx.push(1, out);
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "drops" => Some(self.drops.to_string()),
            "active" => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        match name {
            "active" => Some(crate::parse_value::<bool>(value).map(|v| self.active = v)),
            _ => None,
        }
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![("TTL expired", self.drops)];
        if self.no_header > 0 {
            v.push(("no IP header", self.no_header));
        }
        v
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
