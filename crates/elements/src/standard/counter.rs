//! Counts packets and bytes passing through.
//!
//! # Synopsis
//! `Counter([KEYWORDS])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! None yet (Click's `COUNT_CALL` and `BYTE_COUNT_CALL` are not supported).
//!
//! # Handlers
//! - `count` (read): packets counted.
//! - `byte_count` (read): bytes counted.
//! - `reset` (write): set the counts to zero.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> c :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! One pass over the batch summing lengths; the batch is forwarded whole.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Counter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Counter",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/counter"),
    make,
};

struct Counter {
    count: u64,
    bytes: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(Counter { count: 0, bytes: 0 }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("byte_count"),
    HandlerSpec::write("reset"),
];

impl Element for Counter {
    #[inline]
    fn action(&mut self, batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        self.count += batch.len() as u64;
        self.bytes += batch.iter().map(|p| p.len() as u64).sum::<u64>();
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "byte_count" => Some(self.bytes.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Option<Result<(), String>> {
        match name {
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                Some(Ok(()))
            }
            _ => None,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
