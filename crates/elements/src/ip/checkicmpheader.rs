//! Checks ICMP headers: protocol, lengths per message type, checksum.
//!
//! # Synopsis
//! `CheckICMPHeader([KEYWORDS])`
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
//! (CheckIPHeader); the ICMP message runs to the end of the packet. Drop
//! reasons (Click's): `not ICMP`, `bad packet length` (under 8 bytes; error
//! messages (unreachable, time exceeded, parameter problem, source quench,
//! redirect) without 28 bytes of quoted datagram; timestamp messages not
//! exactly 20 bytes; information requests not exactly 8), `bad ICMP
//! checksum`. The first bad packet is reported on standard error as
//! `NAME: ICMP header check failed: REASON`.
//!
//! # Handlers
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, only with `DETAILS true`): `COUNT<tab>REASON`
//!   lines.
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> ipc :: IPClassifier(icmp, -);
//! ipc[0] -> CheckICMPHeader -> ...;
//! ```
//!
//! # Implementation
//! One pass over the batch (bad packets split off only when there are
//! some); the checksum uses `linerate_wire`'s sum.

use super::util::{check_element_common, nh_offset, th_offset, CheckCounts};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use linerate_wire::checksum;

/// The `CheckICMPHeader` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckICMPHeader",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/checkicmpheader"),
    make,
};

const REASONS: &[&str] = &["not ICMP", "bad packet length", "bad ICMP checksum"];

struct CheckICMPHeader {
    counts: CheckCounts,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let prefix = format!("{}: ICMP header check failed: ", ctx.name);
    Ok(Box::new(CheckICMPHeader {
        counts: CheckCounts::configure(ctx, prefix, REASONS)?,
    }))
}

fn check(p: &Packet) -> Result<(), u8> {
    let Some(nh) = nh_offset(p) else {
        return Err(0);
    };
    let d = p.data();
    if d.len() - nh < 10 || d[nh + 9] != 1 {
        return Err(0);
    }
    let t = d.get(th_offset(p, nh)..).ok_or(1u8)?;
    let n = t.len();
    if n < 8 {
        return Err(1);
    }
    let ok = match t[0] {
        3 | 11 | 12 | 4 | 5 => n >= 8 + 28,
        13 | 14 => n == 20,
        15 | 16 => n == 8,
        _ => true,
    };
    if !ok {
        return Err(1);
    }
    if checksum::sum(t) != 0xffff {
        return Err(2);
    }
    Ok(())
}

impl Element for CheckICMPHeader {
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
