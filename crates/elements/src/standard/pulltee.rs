//! Duplicates pulled packets: the original to output 0, copies pushed out
//! the other outputs.
//!
//! # Synopsis
//! `PullTee([N])`
//!
//! # Ports
//! One pull input; pull output 0 and any number of push outputs.
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
//! InfiniteSource(LIMIT 10, STOP true) -> Queue -> pt :: PullTee -> Unqueue -> Discard;
//! pt[1] -> Discard;
//! ```
//!
//! # Implementation
//! Each pulled batch is cloned (shared data, copy-on-write) once per push
//! output before it is returned on output 0.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `PullTee` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "PullTee",
    port_count: "1/1-",
    processing: "l/lh",
    doc: element_doc!("standard/pulltee"),
    make,
};

struct PullTee {
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
    Ok(Box::new(PullTee { n: ctx.noutputs() }))
}

impl Element for PullTee {
    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        let b = ctx.pull(0, max)?;
        for o in 1..self.n {
            ctx.push(o, b.iter().cloned().collect());
        }
        Some(b)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
