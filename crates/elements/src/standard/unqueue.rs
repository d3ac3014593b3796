//! Pulls packets from its input and pushes them to its output.
//!
//! # Synopsis
//! `Unqueue([BURST, KEYWORDS])`
//!
//! # Ports
//! One pull input, one push output. Unqueue has a task.
//!
//! # Arguments
//! - `BURST` (integer, default 64): packets pulled per task run (Click's
//!   default is 1; a burst keeps batches intact). 0 or less means 64.
//! - `LIMIT` (integer, default -1): stop after this many packets (-1: never).
//! - `ACTIVE` (boolean, default true): whether the task runs.
//!
//! At the end of a run (after the sources stopped and the threads have
//! joined) Unqueue moves on what its input still holds, a burst at a time,
//! within `LIMIT` and only if active: a `Queue` between two threads (a
//! fast path and its aggregator, say) loses nothing when a run stops.
//! Click leaves those packets in the Queue.
//!
//! # Handlers
//! - `count` (read): packets moved.
//! - `reset` (write): set the count to zero.
//! - `active` (read/write), `burst` (read/write), `limit` (read/write).
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 100, STOP true) -> Queue -> Unqueue(BURST 8) -> Discard;
//! ```

use linerate_runtime::{ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Unqueue` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Unqueue",
    port_count: "1/1",
    processing: "l/h",
    doc: element_doc!("standard/unqueue"),
    make,
};

struct Unqueue {
    burst: usize,
    limit: i64,
    active: bool,
    count: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let burst: i64 = a.read_p_or("BURST", ctx.default_burst as i64);
    let limit: i64 = a.read_or("LIMIT", -1);
    let active = a.read_or("ACTIVE", true);
    a.complete().map_err(|e| e.0)?;
    let burst = if burst <= 0 {
        ctx.default_burst
    } else {
        burst as usize
    };
    Ok(Box::new(Unqueue {
        burst,
        limit,
        active,
        count: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::write("reset"),
    HandlerSpec::read_write("active"),
    HandlerSpec::read_write("burst"),
    HandlerSpec::read_write("limit"),
];

impl Element for Unqueue {
    fn is_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        if !self.active {
            return false;
        }
        let mut max = self.burst;
        if self.limit >= 0 {
            max = max.min((self.limit as u64).saturating_sub(self.count) as usize);
            if max == 0 {
                return false;
            }
        }
        match ctx.pull(0, max) {
            Some(b) => {
                self.count += b.len() as u64;
                ctx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn flush(&mut self, ctx: &mut Ctx<'_>) -> bool {
        self.run_task(ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "active" => self.active.to_string(),
            "burst" => self.burst.to_string(),
            "limit" => self.limit.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "reset" => {
                self.count = 0;
                Ok(())
            }
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "burst" => crate::parse_value::<usize>(value).map(|v| self.burst = v.max(1)),
            "limit" => crate::parse_value::<i64>(value).map(|v| self.limit = v),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
