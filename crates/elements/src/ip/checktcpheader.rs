//! Checks TCP headers: protocol, lengths and checksum.
//!
//! # Synopsis
//! `CheckTCPHeader([KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for valid packets, optional push
//! output 1 for invalid packets (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `VERBOSE` (boolean, default false): report every bad packet, not just
//!   the first.
//! - `DETAILS` (boolean, default false): keep counts per reason
//!   (`drop_details`).
//!
//! Expects IP packets with network and transport header annotations
//! (CheckIPHeader). Drop reasons (Click's): `not TCP` (no IP header or
//! another protocol), `bad packet length` (data offset below 20 or beyond
//! the IP length, IP length beyond the packet, or an IP header shorter than
//! 20 bytes), `bad TCP checksum`. The first bad packet is reported on
//! standard error as `NAME: TCP header check failed: REASON`.
//!
//! # Handlers
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, only with `DETAILS true`): `COUNT<tab>REASON`
//!   lines.
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> ipc :: IPClassifier(tcp, -);
//! ipc[0] -> CheckTCPHeader -> ...;
//! ```
//!
//! # Implementation
//! One pass over the batch (bad packets split off only when there are
//! some); the checksum uses `linerate_wire`'s sum and pseudo-header sum.

use super::util::{
    be16, check_element_common, nh_offset, th_offset, transport_checksum, CheckCounts,
};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use linerate_wire::checksum;

/// The `CheckTCPHeader` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckTCPHeader",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/checktcpheader"),
    make,
};

const REASONS: &[&str] = &["not TCP", "bad packet length", "bad TCP checksum"];

struct CheckTCPHeader {
    counts: CheckCounts,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let prefix = format!("{}: TCP header check failed: ", ctx.name);
    Ok(Box::new(CheckTCPHeader {
        counts: CheckCounts::configure(ctx, prefix, REASONS)?,
    }))
}

fn check(p: &Packet) -> Result<(), u8> {
    let Some(nh) = nh_offset(p) else {
        return Err(0);
    };
    let d = p.data();
    let ip = &d[nh..];
    if ip.len() < 20 {
        return Err(if ip.len() > 9 && ip[9] != 6 { 0 } else { 1 });
    }
    if ip[9] != 6 {
        return Err(0);
    }
    let iph_len = usize::from(ip[0] & 15) << 2;
    let len = usize::from(be16(ip, 2)).checked_sub(iph_len).ok_or(1u8)?;
    let th = th_offset(p, nh);
    let t = d.get(th..).filter(|t| t.len() >= 13).ok_or(1u8)?;
    let tcph_len = usize::from(t[12] >> 4) << 2;
    if tcph_len < 20 || len < tcph_len || d.len() < len + iph_len + nh || t.len() < len {
        return Err(1);
    }
    let sum = checksum::sum(&t[..len]);
    if transport_checksum(sum, ip, 6, len as u16) != 0 {
        return Err(2);
    }
    Ok(())
}

impl Element for CheckTCPHeader {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let counts = &mut self.counts;
        let bad = super::util::partition(&mut batch, |p| match check(p) {
            Ok(()) => false,
            Err(r) => {
                counts.note(r);
                true
            }
        });
        self.counts.emit(bad, ctx);
        batch
    }

    check_element_common!();
}
