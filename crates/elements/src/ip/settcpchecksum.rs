//! Sets the TCP checksum.
//!
//! # Synopsis
//! `SetTCPChecksum([FIXOFF])`
//!
//! # Ports
//! One agnostic input, one agnostic output.
//!
//! # Arguments
//! - `FIXOFF` (boolean, default false): first repair the TCP data offset if
//!   it is below 5 words (set to 5) or, in an unfragmented packet, beyond
//!   the segment (set to the segment length in words).
//!
//! Expects IP packets with network and transport header annotations. The
//! checksum covers the IP payload (total length minus header length).
//! Packets whose segment is shorter than 20 bytes or longer than the data
//! are dropped and counted (`bad lengths`); the first is reported on
//! standard error as `SetTCPChecksum: bad lengths` (Click reports each).
//!
//! # Handlers
//! None.
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> SetTCPChecksum -> ...;
//! ```
//!
//! # Implementation
//! One pass over the batch with `linerate_wire`'s checksum and
//! pseudo-header sums; nothing is allocated.

use super::util::{be16, nh_offset, th_offset, transport_checksum, IP_MF, IP_OFFMASK};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use linerate_wire::checksum;
use std::any::Any;

/// The `SetTCPChecksum` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SetTCPChecksum",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/settcpchecksum"),
    make,
};

struct SetTCPChecksum {
    fixoff: bool,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let fixoff = a.read_p_or("FIXOFF", false);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(SetTCPChecksum { fixoff, drops: 0 }))
}

fn set(p: &mut Packet, fixoff: bool) -> bool {
    let Some(nh) = nh_offset(p) else { return false };
    if p.len() - nh < 20 {
        return false;
    }
    let th = th_offset(p, nh);
    let d = p.data();
    let ip = &d[nh..];
    let Some(plen) = usize::from(be16(ip, 2)).checked_sub(usize::from(ip[0] & 15) << 2) else {
        return false;
    };
    if plen < 20 || th > d.len() || plen > d.len() - th {
        return false;
    }
    let is_frag = be16(ip, 6) & (IP_MF | IP_OFFMASK) != 0;
    let d = p.data_mut();
    if fixoff {
        let off = usize::from(d[th + 12] >> 4) << 2;
        if off < 20 {
            d[th + 12] = (d[th + 12] & 0x0f) | (5 << 4);
        } else if off > plen && !is_frag {
            d[th + 12] = (d[th + 12] & 0x0f) | (((plen >> 2) as u8) << 4);
        }
    }
    d[th + 16] = 0;
    d[th + 17] = 0;
    let sum = checksum::sum(&d[th..th + plen]);
    let c = transport_checksum(sum, &d[nh..nh + 20], 6, plen as u16);
    d[th + 16..th + 18].copy_from_slice(&c.to_be_bytes());
    true
}

impl Element for SetTCPChecksum {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let fixoff = self.fixoff;
        let mut bad = 0u64;
        let out = super::util::partition(&mut batch, |p| {
            let ok = set(p, fixoff);
            bad += u64::from(!ok);
            !ok
        });
        drop(out);
        if bad > 0 {
            if self.drops == 0 {
                super::util::chatter("SetTCPChecksum: bad lengths");
            }
            self.drops += bad;
        }
        batch
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("bad lengths", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
