//! Removes bytes from the front of packets.
//!
//! # Synopsis
//! `Strip(LENGTH)`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `LENGTH` (unsigned, mandatory): bytes to remove. Packets shorter than
//!   LENGTH become empty.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> Discard;
//! ```
//!
//! # Implementation
//! Moves each packet's data pointer; no bytes are copied. The bytes stay in
//! the headroom, so `Unstrip` can restore them.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `Strip` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Strip",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/strip"),
    make,
};

struct Strip {
    n: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let n: Option<u32> = a.read_mp("LENGTH");
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(Strip {
        n: n.unwrap_or(0) as usize,
    }))
}

impl Element for Strip {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let n = self.n;
        for p in batch.iter_mut() {
            p.pull(n);
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
