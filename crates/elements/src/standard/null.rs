//! Passes packets through unchanged.
//!
//! # Synopsis
//! `Null`
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
//! InfiniteSource(LIMIT 10, STOP true) -> Null -> Discard;
//! ```
//!
//! # Implementation
//! The default batch action: the batch is forwarded as it is, so the element
//! costs the framework's per-batch dispatch and nothing per packet.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};
use std::any::Any;

/// The `Null` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Null",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/null"),
    make,
};

struct Null;

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(Null))
}

impl Element for Null {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
