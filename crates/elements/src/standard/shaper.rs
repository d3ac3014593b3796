//! Lets at most RATE packets per second be pulled through.
//!
//! # Synopsis
//! `Shaper(RATE)`
//!
//! # Ports
//! One pull input, one pull output.
//!
//! # Arguments
//! - `RATE` (integer, mandatory): packets per second.
//!
//! # Handlers
//! - `rate` (read/write): the rate.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 100) -> Queue -> Shaper(10) -> Unqueue -> Discard;
//! ```
//!
//! # Implementation
//! Shaping with low burstiness, like Click's gap-rate Shaper: a token
//! bucket holding at most 1 ms of tokens (at least one), starting full. A
//! pull returns at most as many packets as there are whole tokens. When the
//! bucket is empty, Shaper sets its timer for the next token so simulated
//! time advances to it. Like Click's, the output depends on the timing of
//! the pulls.

use super::common::TokenBucket;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Shaper` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Shaper",
    port_count: "1/1",
    processing: "l/l",
    doc: element_doc!("standard/shaper"),
    make,
};

struct Shaper {
    tb: TokenBucket,
    wake: u64,
}

fn capacity(rate: u64) -> u64 {
    (rate / 1000).max(1)
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let rate: Option<u32> = a.read_mp("RATE");
    a.complete().map_err(|e| e.0)?;
    let rate = rate.unwrap_or(0) as u64;
    Ok(Box::new(Shaper {
        tb: TokenBucket::new(rate, capacity(rate)),
        wake: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("rate")];

impl Element for Shaper {
    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        let now = ctx.now_ns();
        self.tb.refill(now);
        let n = (self.tb.tokens() as usize).min(max);
        if n == 0 {
            if self.wake <= now {
                let dt = self.tb.time_until_contains(1);
                if dt != u64::MAX {
                    self.wake = now.saturating_add(dt.max(1));
                    ctx.schedule_at(self.wake);
                }
            }
            return None;
        }
        let b = ctx.pull(0, n)?;
        self.tb.remove(b.len() as u64);
        Some(b)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "rate").then(|| self.tb.rate().to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "rate").then(|| {
            crate::parse_value::<u32>(value).map(|r| {
                self.tb.assign(r as u64, capacity(r as u64));
                self.wake = 0;
            })
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
