//! Strips everything before the network header.
//!
//! # Synopsis
//! `StripToNetworkHeader`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! None.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> MarkIPHeader(14) -> StripToNetworkHeader -> Discard;
//! ```
//!
//! # Implementation
//! Moves the data pointer to the network header annotation (back over the
//! headroom if the header lies before the data). Packets without a network
//! header annotation pass unchanged, as in Click.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `StripToNetworkHeader` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "StripToNetworkHeader",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/striptonetworkheader"),
    make,
};

struct StripToNetworkHeader;

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(StripToNetworkHeader))
}

impl Element for StripToNetworkHeader {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            match p.network_header_offset() {
                Some(off) if off > 0 => p.pull(off as usize),
                Some(off) if off < 0 => p.unstrip(off.unsigned_abs()),
                _ => {}
            }
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
