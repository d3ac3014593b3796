//! Pads packets to a minimum length.
//!
//! # Synopsis
//! `Pad([LENGTH, ZERO])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `LENGTH` (unsigned, default 0): minimum length. If 0, each packet is
//!   extended by its extra length annotation (restoring what `Truncate`
//!   removed, as zeros).
//! - `ZERO` (boolean, default true): whether the new bytes are zero. New
//!   bytes are always zero here.
//!
//! The extra length annotation is cleared.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Pad(60) -> ToDump(out.pcap);
//! ```
//!
//! # Implementation
//! Appends in the packet's tailroom (reallocating only if there is none).

use linerate_runtime::anno::offsets::EXTRA_LENGTH;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `Pad` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Pad",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/pad"),
    make,
};

/// Largest amount Pad adds to one packet (keeps a bad annotation harmless).
const MAX_PAD: usize = 65536;

struct Pad {
    len: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let len: u32 = a.read_p_or("LENGTH", 0);
    let _zero: bool = a.read_or("ZERO", true);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(Pad { len: len as usize }))
}

impl Element for Pad {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let len = self.len;
        for p in batch.iter_mut() {
            let add = if len > 0 {
                len.saturating_sub(p.len())
            } else {
                (p.anno().u32(EXTRA_LENGTH) as usize).min(MAX_PAD)
            };
            if add > 0 {
                p.put(add);
            }
            p.anno_mut().set_u32(EXTRA_LENGTH, 0);
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
