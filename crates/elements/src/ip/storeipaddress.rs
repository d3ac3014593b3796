//! Stores an IP address (an annotation or a constant) into the packet.
//!
//! # Synopsis
//! `StoreIPAddress(OFFSET [, ANNO])`
//! `StoreIPAddress(ADDR, OFFSET)`
//!
//! # Ports
//! One agnostic input, one agnostic output.
//!
//! # Arguments
//! - `OFFSET` (unsigned, or `src`/`dst`): where to write the four bytes,
//!   from the start of the packet data; `src` and `dst` mean the IP header's
//!   source and destination fields.
//! - `ADDR` (IP address): the constant to write.
//! - `ANNO` (keyword, annotation name, default `DST_IP`): without `ADDR`,
//!   the annotation whose address is written.
//!
//! As in Click: with an annotation, a zero address is not written at a
//! numeric offset; a packet too short for the offset passes unchanged.
//! Writing `src` or `dst` (which needs the network header annotation)
//! updates the IP checksum, and the TCP or UDP checksum (a zero UDP checksum
//! stays zero) of first fragments, incrementally.
//!
//! # Handlers
//! None.
//!
//! # Example
//! ```click
//! ... -> StoreIPAddress(10.0.0.1, src) -> ...;
//! ... -> GetIPAddress(16) -> ... -> StoreIPAddress(dst) -> ...;
//! ```
//!
//! # Implementation
//! Incremental checksum updates (RFC 1624, `update_u32`); nothing is
//! allocated.

use super::util::{be16, be32, nh_offset, th_offset, IP_OFFMASK};
use linerate_runtime::anno::anno_by_name;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use linerate_wire::checksum;
use std::any::Any;
use std::net::Ipv4Addr;

/// The `StoreIPAddress` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "StoreIPAddress",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/storeipaddress"),
    make,
};

#[derive(Clone, Copy)]
enum Where {
    Offset(usize),
    /// Offset within the IP header (12 for `src`, 16 for `dst`).
    Header(usize),
}

struct StoreIPAddress {
    addr: Option<[u8; 4]>,
    anno: usize,
    at: Where,
}

fn parse_where(s: &str) -> Result<Where, String> {
    match s.to_ascii_lowercase().as_str() {
        "src" => Ok(Where::Header(12)),
        "dst" => Ok(Where::Header(16)),
        _ => s
            .parse::<usize>()
            .map(Where::Offset)
            .map_err(|_| "last argument should be byte offset of IP address".to_string()),
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let anno: Option<linerate_args::Word> = a.read("ANNO");
    let rest = a.read_rest();
    a.complete().map_err(|e| e.0)?;
    let anno = match anno {
        None => 0,
        Some(w) => match anno_by_name(&w.0) {
            Some(i) if i.size == 4 || (i.size == 1 && i.offset + 4 <= 48) => i.offset,
            _ => return Err(vec![format!("ANNO: bad annotation '{}'", w.0)]),
        },
    };
    let (addr, at) = match rest.as_slice() {
        [off] => (None, off),
        [addr, off] => match addr.parse::<Ipv4Addr>() {
            Ok(a) => (Some(a.octets()), off),
            Err(_) => return Err(vec!["first argument should be IP address".to_string()]),
        },
        _ => return Err(vec!["expected [IP address, ] byte offset".to_string()]),
    };
    let at = parse_where(at).map_err(|e| vec![e])?;
    Ok(Box::new(StoreIPAddress { addr, anno, at }))
}

fn store_header(p: &mut Packet, field: usize, a: [u8; 4]) {
    let Some(nh) = nh_offset(p) else { return };
    let d = p.data();
    if d.len() - nh < 20 || (usize::from(d[nh] & 15) << 2) < 20 {
        return;
    }
    let th = th_offset(p, nh);
    let ip = &d[nh..];
    let first_frag = be16(ip, 6) & IP_OFFMASK == 0;
    let proto = ip[9];
    let tl = d.len().saturating_sub(th);
    let old = be32(ip, field);
    let new = u32::from_be_bytes(a);
    let d = p.data_mut();
    d[nh + field..nh + field + 4].copy_from_slice(&a);
    let c = checksum::update_u32(be16(d, nh + 10), old, new);
    d[nh + 10..nh + 12].copy_from_slice(&c.to_be_bytes());
    let at = if proto == 6 && first_frag && tl >= 20 {
        Some(th + 16)
    } else if proto == 17 && first_frag && tl >= 8 && be16(d, th + 6) != 0 {
        Some(th + 6)
    } else {
        None
    };
    if let Some(at) = at {
        let c = checksum::update_u32(be16(d, at), old, new);
        d[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }
}

impl Element for StoreIPAddress {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            let a = match self.addr {
                Some(a) => a,
                None => {
                    let mut a = [0u8; 4];
                    a.copy_from_slice(&p.anno().user[self.anno..self.anno + 4]);
                    a
                }
            };
            match self.at {
                Where::Offset(off) => {
                    if (self.addr.is_some() || a != [0; 4]) && off + 4 <= p.len() {
                        p.data_mut()[off..off + 4].copy_from_slice(&a);
                    }
                }
                Where::Header(field) => store_header(p, field, a),
            }
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
