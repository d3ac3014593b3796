//! Stores a time in packets' timestamp annotation.
//!
//! # Synopsis
//! `SetTimestamp([TIMESTAMP, FIRST])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `TIMESTAMP` (timestamp, optional): the time to store, in seconds since
//!   the epoch (`1.5`, `1000000000.000001`). Without it, the current time
//!   (system or simulated) when the packet arrives.
//! - `FIRST` (boolean, default false): set the first-timestamp annotation
//!   (`FIRST_TIMESTAMP`, nanoseconds) instead of the timestamp annotation.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 5, STOP true) -> SetTimestamp(1.5) -> Discard;
//! ```
//!
//! # Implementation
//! The clock is read once per batch: its packets arrive together.

use linerate_runtime::anno::offsets::FIRST_TIMESTAMP;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `SetTimestamp` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SetTimestamp",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/settimestamp"),
    make,
};

struct SetTimestamp {
    time: Option<u64>,
    first: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let time: Option<linerate_args::Timestamp> = a.read_p("TIMESTAMP");
    let first = a.read_or("FIRST", false);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(SetTimestamp {
        time: time.map(|t| t.nanos),
        first,
    }))
}

impl Element for SetTimestamp {
    #[inline]
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let t = self.time.unwrap_or_else(|| ctx.now_ns());
        if self.first {
            for p in batch.iter_mut() {
                p.anno_mut().set_u64(FIRST_TIMESTAMP, t);
            }
        } else {
            for p in batch.iter_mut() {
                p.set_timestamp_ns(t);
            }
        }
        batch
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
