//! Moves packet data to a given memory alignment.
//!
//! # Synopsis
//! `Align(MODULUS, OFFSET)`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `MODULUS` (unsigned, mandatory): 2, 4 or 8.
//! - `OFFSET` (unsigned, mandatory, less than MODULUS): the data's address
//!   modulo MODULUS after Align.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! // IP headers after a 14-byte Ethernet header, 4-byte aligned.
//! FromDump(in.pcap, STOP true) -> Align(4, 2) -> Strip(14) -> Discard;
//! ```
//!
//! # Implementation
//! A packet already aligned passes untouched (the usual case: buffers are
//! cache-line aligned). Otherwise its bytes are moved within its buffer
//! (into the headroom, or the tailroom if the headroom is too small); the
//! header annotations keep pointing at the same bytes.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use std::any::Any;

/// The `Align` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Align",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/align"),
    make,
};

struct Align {
    modulus: usize,
    offset: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let modulus: Option<u32> = a.read_mp("MODULUS");
    let offset: Option<u32> = a.read_mp("OFFSET");
    a.complete().map_err(|e| e.0)?;
    let (m, o) = (modulus.unwrap_or(0) as usize, offset.unwrap_or(0) as usize);
    if !matches!(m, 2 | 4 | 8) {
        return Err(vec!["MODULUS: must be 2, 4, or 8".to_string()]);
    }
    if o >= m {
        return Err(vec!["OFFSET: must be less than MODULUS".to_string()]);
    }
    Ok(Box::new(Align {
        modulus: m,
        offset: o,
    }))
}

fn realign(p: &mut Packet, m: usize, off: usize) {
    let _ = p.data_mut(); // unshare first: copying moves the data
    let cur = p.data().as_ptr() as usize % m;
    if cur == off {
        return;
    }
    let nh = p.network_header_offset();
    let th = p.transport_header_offset();
    let len = p.len();
    let left = (cur + m - off) % m;
    let right = m - left;
    if p.headroom() >= left {
        p.push(left);
        p.data_mut().copy_within(left..left + len, 0);
        p.take(left);
    } else if p.tailroom() >= right {
        p.put(right);
        p.data_mut().copy_within(0..len, right);
        p.pull(right);
    } else {
        return;
    }
    if let Some(h) = nh {
        p.set_network_header(h);
    }
    if let Some(h) = th {
        p.set_transport_header(h);
    }
}

impl Element for Align {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let (m, o) = (self.modulus, self.offset);
        for p in batch.iter_mut() {
            if p.data().as_ptr() as usize % m != o {
                realign(p, m, o);
            }
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
