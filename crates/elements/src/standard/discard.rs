//! Drops every packet it receives.
//!
//! # Synopsis
//! `Discard([KEYWORDS])`
//!
//! # Ports
//! One input, no outputs; agnostic. When its input is pull, Discard has a
//! task that pulls packets and drops them.
//!
//! # Arguments
//! - `ACTIVE` (boolean, default true): in pull mode, whether the task pulls.
//! - `BURST` (integer, default 64): in pull mode, packets pulled per task run.
//!   (Click pulls one; a burst keeps batches intact.)
//!
//! # Handlers
//! - `count` (read): packets discarded.
//! - `reset_counts` (write): set the count to zero.
//! - `active` (read/write): see `ACTIVE`.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Discard;
//! ```

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, IoCounts};
use std::any::Any;

/// The `Discard` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Discard",
    port_count: "1/0",
    processing: "a/a",
    doc: element_doc!("standard/discard"),
    make,
};

struct Discard {
    count: u64,
    bytes: u64,
    active: bool,
    burst: usize,
    pull: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let active = a.read_or("ACTIVE", true);
    let burst = a.read_or("BURST", ctx.default_burst).max(1);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(Discard {
        count: 0,
        bytes: 0,
        active,
        burst,
        pull: !ctx.input_is_push(0),
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::write("reset_counts"),
    HandlerSpec::read_write("active"),
];

impl Discard {
    #[inline]
    fn eat(&mut self, b: Batch) {
        self.count += b.len() as u64;
        self.bytes += b.iter().map(|p| p.len() as u64).sum::<u64>();
    }
}

impl Element for Discard {
    fn push(&mut self, _port: usize, batch: Batch, _ctx: &mut Ctx<'_>) {
        self.eat(batch);
    }

    fn is_task(&self) -> bool {
        self.pull
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        if !self.active {
            return false;
        }
        match ctx.pull(0, self.burst) {
            Some(b) => {
                self.eat(b);
                true
            }
            None => false,
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "active" => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        match name {
            "reset_counts" => {
                self.count = 0;
                self.bytes = 0;
                Some(Ok(()))
            }
            "active" => Some(crate::parse_value::<bool>(value).map(|v| self.active = v)),
            _ => None,
        }
    }

    fn io_counts(&self) -> Option<IoCounts> {
        Some(IoCounts {
            source: false,
            packets: self.count,
            bytes: self.bytes,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
