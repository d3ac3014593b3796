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
//! One pass over the batch (`util::partition`, the per-packet code inlined
//! into the loop). The checksum is updated incrementally exactly as Click
//! does (RFC 1624: `~(~sum + 0xfeff)` with one carry fold), without reading
//! the old TTL/protocol word (172 to 139 instructions per packet on the
//! core trace, most of the rest being the copy below), on the field's bytes
//! in little-endian order so that no byte swaps are needed (the same bytes
//! result; session 8, with SetIPChecksum's same change: 486.8 to 480.8
//! instructions a packet for the issue 3 pipeline). A packet that is a
//! view of a trace file or shared with a clone is copied into its own
//! buffer first (no heap allocation).

use super::util::nh_offset;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
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

/// The checksum field's bytes after the TTL is decremented: Click's update
/// (add `~0x0100` to the complemented sum, one carry fold) done on the
/// bytes in little-endian order, where the constant is `0xfffe`: a ones'
/// complement sum commutes with swapping the bytes of its words, so the
/// stored bytes are the same and no byte swaps are needed.
#[inline(always)]
fn ttl_decremented_checksum(field: [u8; 2]) -> [u8; 2] {
    let sum = u32::from(!u16::from_le_bytes(field)) + 0xfffe;
    (!((sum + (sum >> 16)) as u16)).to_le_bytes()
}

impl Element for DecIPTTL {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        if !self.active {
            return batch;
        }
        let multicast = self.multicast;
        let mut expired = 0u64;
        let mut no_header = 0u64;
        let bad = super::util::partition(&mut batch, |p| {
            let Some(nh) = nh_offset(p).filter(|&nh| p.len() - nh >= 20) else {
                no_header += 1;
                return true;
            };
            let ip = &p.data()[nh..nh + 20];
            if !multicast && ip[16] & 0xf0 == 0xe0 {
                return false;
            }
            let ttl = ip[8];
            if ttl <= 1 {
                expired += 1;
                return true;
            }
            let ip = &mut p.data_mut()[nh..nh + 12];
            ip[8] = ttl - 1;
            let sum = ttl_decremented_checksum([ip[10], ip[11]]);
            ip[10..12].copy_from_slice(&sum);
            false
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
        let mut v = vec![("no IP header", self.no_header)];
        if !self.has_out1 {
            v.push(("TTL expired", self.drops));
        }
        v
    }

    fn diverted(&self) -> Vec<(usize, &'static str, u64)> {
        if self.has_out1 {
            vec![(1, "TTL expired", self.drops)]
        } else {
            Vec::new()
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checksum_update_is_clicks_for_every_checksum() {
        for c in 0..=u16::MAX {
            let sum = u32::from(!c) + 0xfeff;
            let click = !((sum + (sum >> 16)) as u16);
            assert_eq!(
                super::ttl_decremented_checksum(c.to_be_bytes()),
                click.to_be_bytes(),
                "{c:#06x}"
            );
        }
    }
}
