//! Sets the IP header annotations without checking anything.
//!
//! # Synopsis
//! `MarkIPHeader([OFFSET])`
//!
//! # Ports
//! One agnostic input, one agnostic output.
//!
//! # Arguments
//! - `OFFSET` (unsigned, default 0): where the IP header starts.
//!
//! The network header annotation is set to `OFFSET` and the transport
//! header annotation to `OFFSET` plus the header length from the IHL field.
//! Unlike Click, a packet no longer than `OFFSET` is left unannotated
//! instead of being annotated past its end.
//!
//! # Handlers
//! None.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> MarkIPHeader(14) -> IPPrint -> Discard;
//! ```
//!
//! # Implementation
//! One pass over the batch writing two annotation fields per packet; no
//! data is read beyond the IHL byte and nothing is copied or allocated.

use super::util::set_ip_header;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `MarkIPHeader` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "MarkIPHeader",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/markipheader"),
    make,
};

struct MarkIPHeader {
    offset: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let offset = a.read_p_or("OFFSET", 0usize);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(MarkIPHeader { offset }))
}

impl Element for MarkIPHeader {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let off = self.offset;
        for p in batch.iter_mut() {
            if let Some(&b) = p.data().get(off) {
                set_ip_header(p, off, usize::from(b & 15) << 2);
            }
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
