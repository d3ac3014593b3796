//! Sends a copy of each packet to every output but the one matching its input.
//!
//! # Synopsis
//! `Hub`
//!
//! # Ports
//! Any number of push inputs, and as many push outputs.
//!
//! # Arguments
//! None.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! h :: Hub;
//! InfiniteSource(LIMIT 5, STOP true) -> [0]h; Idle -> [1]h; Idle -> [2]h;
//! h[0] -> Discard; h[1] -> Discard; h[2] -> Discard;
//! ```
//!
//! # Implementation
//! A packet that arrives on input N goes to every output except N, like an
//! Ethernet hub. Every output but the last one used gets clones (shared
//! data, copy-on-write); the last gets the original batch.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `Hub` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Hub",
    port_count: "-/=",
    processing: "h/h",
    doc: element_doc!("standard/hub"),
    make,
};

struct Hub {
    n: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(Hub { n: ctx.noutputs() }))
}

impl Element for Hub {
    fn push(&mut self, port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let last = if port + 1 == self.n {
            self.n.checked_sub(2)
        } else {
            self.n.checked_sub(1)
        };
        let Some(last) = last else {
            return;
        };
        for o in (0..last).filter(|&o| o != port) {
            ctx.push(o, batch.iter().cloned().collect());
        }
        ctx.push(last, batch);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
