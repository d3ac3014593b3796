//! Checks UDP headers: protocol, lengths and checksum.
//!
//! # Synopsis
//! `CheckUDPHeader([KEYWORDS])`
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
//! (CheckIPHeader). Drop reasons (Click's): `not UDP`, `bad packet length`
//! (UDP length below 8 or beyond the packet), `bad UDP checksum` (a zero
//! checksum means none and is accepted). The first bad packet is reported
//! on standard error as `UDP header check failed: REASON`.
//!
//! # Handlers
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, only with `DETAILS true`): `COUNT<tab>REASON`
//!   lines.
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> ipc :: IPClassifier(udp, -);
//! ipc[0] -> CheckUDPHeader -> ...;
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

/// The `CheckUDPHeader` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckUDPHeader",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/checkudpheader"),
    make,
};

const REASONS: &[&str] = &["not UDP", "bad packet length", "bad UDP checksum"];

struct CheckUDPHeader {
    counts: CheckCounts,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let prefix = "UDP header check failed: ".to_string();
    Ok(Box::new(CheckUDPHeader {
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
        return Err(if ip.len() > 9 && ip[9] != 17 { 0 } else { 1 });
    }
    if ip[9] != 17 {
        return Err(0);
    }
    let iph_len = usize::from(ip[0] & 15) << 2;
    let th = th_offset(p, nh);
    let u = d.get(th..).filter(|u| u.len() >= 8).ok_or(1u8)?;
    let len = usize::from(be16(u, 4));
    if len < 8 || d.len() < len + iph_len + nh || u.len() < len {
        return Err(1);
    }
    if be16(u, 6) != 0 {
        let sum = checksum::sum(&u[..len]);
        if transport_checksum(sum, ip, 17, len as u16) != 0 {
            return Err(2);
        }
    }
    Ok(())
}

impl Element for CheckUDPHeader {
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
