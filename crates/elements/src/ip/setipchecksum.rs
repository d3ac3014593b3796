//! Sets the IP header checksum.
//!
//! # Synopsis
//! `SetIPChecksum()`
//!
//! # Ports
//! One agnostic input, one agnostic output.
//!
//! # Arguments
//! None.
//!
//! Expects packets with an IP network header annotation. Packets without
//! one, or whose header length is below 20 or beyond the packet, are
//! dropped and counted (`bad lengths`); the first is reported on standard
//! error as `SetIPChecksum: bad lengths` (Click reports every one).
//!
//! # Handlers
//! None (the end-of-run summary reports `bad lengths` drops).
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> DecIPTTL -> SetIPChecksum -> ...;
//! ```
//!
//! # Implementation
//! One pass over the batch (`util::partition`, the per-packet code inlined
//! into the loop). A 20-byte header is summed as five 32-bit words with the
//! checksum field masked out instead of being zeroed first (the zeroing
//! stores followed by loads of the same word stalled on store forwarding;
//! 88 to 70 instructions per packet), in little-endian order and stored as
//! such (a ones' complement sum commutes with byte swaps, so the bytes are
//! the same without the swaps); longer headers use `linerate_wire`'s
//! checksum. Shared or view packets
//! are copied into their own buffer first (no heap allocation).
//! Session 9: the loop tests a 20-byte header with one length test and
//! sums it as two 64-bit words and one 32-bit word with end-around
//! carries; headers with options and bad packets are handled out of line
//! (issue 3 pipeline: 452.5 to 440.4 instructions a packet).

use super::util::nh_offset;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use std::any::Any;

/// The `SetIPChecksum` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SetIPChecksum",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/setipchecksum"),
    make,
};

struct SetIPChecksum {
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(SetIPChecksum { drops: 0 }))
}

/// Header offset and length of a packet whose IP header can be checksummed.
#[inline]
fn header(p: &Packet) -> Option<(usize, usize)> {
    let nh = nh_offset(p)?;
    let ip = &p.data()[nh..];
    if ip.len() < 20 {
        return None;
    }
    let hlen = usize::from(ip[0] & 15) << 2;
    (hlen >= 20 && hlen <= ip.len()).then_some((nh, hlen))
}

/// A packet with IP options or bad lengths (out of line: rare): sets the
/// checksum of the former; counts the latter and returns true.
#[cold]
#[inline(never)]
fn options(p: &mut Packet, bad: &mut u64) -> bool {
    let Some((nh, hlen)) = header(p) else {
        *bad += 1;
        return true;
    };
    let ip = &mut p.data_mut()[nh..nh + hlen];
    ip[10] = 0;
    ip[11] = 0;
    let c = (!super::util::ip_header_sum(ip)).to_be_bytes();
    ip[10..12].copy_from_slice(&c);
    false
}

impl Element for SetIPChecksum {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let mut bad = 0u64;
        let out = super::util::partition(&mut batch, |p| {
            // The common 20-byte header first, with one length test.
            if let Some(nh) = nh_offset(p).filter(|&nh| p.len() - nh >= 20) {
                if p.data()[nh] & 15 == 5 {
                    if let Ok(h) = <&mut [u8; 20]>::try_from(&mut p.data_mut()[nh..nh + 20]) {
                        let c = super::util::ip_header_checksum(h);
                        h[10..12].copy_from_slice(&c);
                    }
                    return false;
                }
            }
            options(p, &mut bad)
        });
        if bad > 0 {
            if self.drops == 0 {
                super::util::chatter("SetIPChecksum: bad lengths");
            }
            self.drops += bad;
        }
        drop(out);
        batch
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("bad lengths", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
