//! Sends packets longer than a limit to output 1.
//!
//! # Synopsis
//! `CheckLength(LENGTH)`
//!
//! # Ports
//! One input; one or two outputs; agnostic input and output 0, push
//! output 1.
//!
//! # Arguments
//! - `LENGTH` (unsigned, mandatory): maximum length.
//!
//! # Handlers
//! - `length` (read/write): `LENGTH`.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> cl :: CheckLength(1514) -> Discard;
//! cl[1] -> c :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! Packets of at most LENGTH bytes continue on output 0; longer ones go to
//! output 1 if it is connected, and are dropped otherwise (counted as
//! `too long`). The batch is split in one pass keeping order.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `CheckLength` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckLength",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("standard/checklength"),
    make,
};

struct CheckLength {
    max: usize,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let max: Option<u32> = a.read_mp("LENGTH");
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(CheckLength {
        max: max.unwrap_or(0) as usize,
        drops: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("length")];

impl Element for CheckLength {
    #[inline]
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let max = self.max;
        if batch.iter().all(|p| p.len() <= max) {
            return batch;
        }
        let long = batch.split_off_if(|p| p.len() > max);
        if ctx.noutputs() > 1 {
            ctx.push(1, long);
        } else {
            self.drops += long.len() as u64;
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "length").then(|| self.max.to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "length").then(|| crate::parse_value::<u32>(value).map(|v| self.max = v as usize))
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("too long", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
