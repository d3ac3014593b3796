//! Never sends packets; drops any it receives.
//!
//! # Synopsis
//! `Idle`
//!
//! # Ports
//! Any number of inputs and outputs; agnostic. Pushed packets are dropped;
//! pulls return nothing.
//!
//! # Arguments
//! None.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! Idle -> q :: Queue -> Discard;
//! ```

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `Idle` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Idle",
    port_count: "-/-",
    processing: "a/a",
    doc: element_doc!("standard/idle"),
    make,
};

struct Idle;

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(Idle))
}

impl Element for Idle {
    fn push(&mut self, _port: usize, _batch: Batch, _ctx: &mut Ctx<'_>) {}

    fn pull(&mut self, _port: usize, _max: usize, _ctx: &mut Ctx<'_>) -> Option<Batch> {
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
