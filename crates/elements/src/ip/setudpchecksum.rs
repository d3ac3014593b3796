//! Sets the UDP checksum.
//!
//! # Synopsis
//! `SetUDPChecksum()`
//!
//! # Ports
//! One agnostic input; agnostic output 0; optional push output 1 for
//! fragments and packets too short for their UDP length (dropped when
//! output 1 is not connected).
//!
//! # Arguments
//! None.
//!
//! Expects IP packets with network and transport header annotations. The
//! checksum covers the UDP length. As in Click, a computed checksum of 0 is
//! stored as 0. When output 1 is not connected, the first fragment or short
//! packet is reported on standard error as `NAME: fragment or short packet`.
//!
//! # Handlers
//! None.
//!
//! # Example
//! ```click
//! ... -> SetUDPChecksum -> ...;
//! ```
//!
//! # Implementation
//! One pass over the batch with `linerate_wire`'s checksum and
//! pseudo-header sums; nothing is allocated.

use super::util::{be16, nh_offset, th_offset, transport_checksum, IP_MF, IP_OFFMASK};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use linerate_wire::checksum;
use std::any::Any;

/// The `SetUDPChecksum` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SetUDPChecksum",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/setudpchecksum"),
    make,
};

struct SetUDPChecksum {
    name: String,
    has_out1: bool,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(SetUDPChecksum {
        name: ctx.name.to_string(),
        has_out1: ctx.noutputs() > 1,
        drops: 0,
    }))
}

fn set(p: &mut Packet) -> bool {
    let Some(nh) = nh_offset(p) else { return false };
    if p.len() - nh < 20 {
        return false;
    }
    let th = th_offset(p, nh);
    let d = p.data();
    if be16(&d[nh..], 6) & (IP_MF | IP_OFFMASK) != 0 || th > d.len() || d.len() - th < 8 {
        return false;
    }
    let len = usize::from(be16(d, th + 4));
    if d.len() - th < len || len < 8 {
        return false;
    }
    let d = p.data_mut();
    d[th + 6] = 0;
    d[th + 7] = 0;
    let sum = checksum::sum(&d[th..th + len]);
    let c = transport_checksum(sum, &d[nh..nh + 20], 17, len as u16);
    d[th + 6..th + 8].copy_from_slice(&c.to_be_bytes());
    true
}

impl Element for SetUDPChecksum {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let mut bad = 0u64;
        let out = super::util::partition(&mut batch, |p| {
            let ok = set(p);
            bad += u64::from(!ok);
            !ok
        });
        if bad > 0 {
            if self.drops == 0 && !self.has_out1 {
                super::util::chatter(&format!("{}: fragment or short packet", self.name));
            }
            self.drops += bad;
        }
        if let (Some(out), true) = (out, self.has_out1) {
            ctx.push(1, out);
        }
        batch
    }

    drops_or_output_1!(
        self,
        self.has_out1,
        vec![("fragment or short packet", self.drops)]
    );

    fn as_any(&self) -> &dyn Any {
        self
    }
}
