//! Sends a copy of each packet to every output.
//!
//! # Synopsis
//! `Tee([N])`
//!
//! # Ports
//! One push input, one or more push outputs.
//!
//! # Arguments
//! - `N` (integer, optional): number of outputs; if given, it must equal the
//!   number of connected outputs.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> t :: Tee;
//! t[0] -> ToDump(copy.pcap);
//! t[1] -> Discard;
//! ```
//!
//! # Implementation
//! Outputs 0 to N-2 get clones (shared data, copy-on-write); the last output
//! gets the original packets, as in Click.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `Tee` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Tee",
    port_count: "1/1-",
    processing: "h/h",
    doc: element_doc!("standard/tee"),
    make,
};

struct Tee {
    n: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let n: Option<usize> = a.read_p("N");
    a.complete().map_err(|e| e.0)?;
    if let Some(n) = n {
        if n != ctx.noutputs() {
            return Err(vec![format!(
                "N is {n}, but {} outputs are connected",
                ctx.noutputs()
            )]);
        }
    }
    Ok(Box::new(Tee { n: ctx.noutputs() }))
}

impl Element for Tee {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        for o in 0..self.n - 1 {
            ctx.push(o, batch.iter().cloned().collect());
        }
        ctx.push(self.n - 1, batch);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
