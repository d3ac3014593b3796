//! Sets an IP address annotation (by default the destination, `DST_IP`).
//!
//! # Synopsis
//! `SetIPAddress(ADDR [, ANNO])`
//!
//! # Ports
//! One agnostic input, one agnostic output.
//!
//! # Arguments
//! - `ADDR` (IP address, mandatory): the address to store.
//! - `ANNO` (annotation name or offset, default `DST_IP`): where to store
//!   it; the annotation must hold 4 bytes.
//!
//! # Handlers
//! None.
//!
//! # Example
//! ```click
//! ... -> SetIPAddress(10.0.0.1) -> ARPQuerier(...) -> ...;
//! ```
//!
//! # Implementation
//! Writes four annotation bytes per packet; packet data is never touched.

use linerate_runtime::anno::anno_by_name;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;
use std::net::Ipv4Addr;

/// The `SetIPAddress` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SetIPAddress",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/setipaddress"),
    make,
};

struct SetIPAddress {
    addr: [u8; 4],
    offset: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let addr: Option<Ipv4Addr> = a.read_mp("ADDR");
    let anno: Option<linerate_args::Word> = a.read_p("ANNO");
    a.complete().map_err(|e| e.0)?;
    let offset = match anno {
        None => 0,
        Some(w) => match anno_by_name(&w.0) {
            Some(i) if i.size == 4 || (i.size == 1 && i.offset + 4 <= 48) => i.offset,
            _ => return Err(vec![format!("ANNO: bad annotation '{}'", w.0)]),
        },
    };
    Ok(Box::new(SetIPAddress {
        addr: addr.unwrap_or(Ipv4Addr::UNSPECIFIED).octets(),
        offset,
    }))
}

impl Element for SetIPAddress {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            p.anno_mut().user[self.offset..self.offset + 4].copy_from_slice(&self.addr);
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
