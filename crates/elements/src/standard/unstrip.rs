//! Restores bytes in front of packets' data.
//!
//! # Synopsis
//! `Unstrip(LENGTH)`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `LENGTH` (unsigned, mandatory): bytes to restore.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> Unstrip(14) -> Discard;
//! ```
//!
//! # Implementation
//! Moves each packet's data pointer back over its headroom, so bytes removed
//! by `Strip` reappear unchanged. Where the headroom is too small (a packet
//! never stripped), the missing bytes are added as zeros.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `Unstrip` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Unstrip",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/unstrip"),
    make,
};

struct Unstrip {
    n: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let n: Option<u32> = a.read_mp("LENGTH");
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(Unstrip {
        n: n.unwrap_or(0) as usize,
    }))
}

impl Element for Unstrip {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let n = self.n;
        for p in batch.iter_mut() {
            let h = p.headroom();
            if h >= n {
                p.unstrip(n);
            } else {
                p.unstrip(h);
                p.push(n - h);
                p.data_mut()[..n - h].fill(0);
            }
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
