//! Splits a packet stream by rate: conforming packets to output 0, the
//! excess to output 1.
//!
//! # Synopsis
//! `RatedSplitter(RATE [, KEYWORDS])`
//!
//! # Ports
//! One push input; two push outputs.
//!
//! # Arguments
//! - `RATE` (integer, mandatory): packets per second sent to output 0.
//! - `BURST_DURATION` (time): the token bucket holds RATE × BURST_DURATION
//!   tokens (default 20 ms worth).
//! - `BURST_SIZE` (integer): alternatively, the bucket size in packets.
//!
//! # Handlers
//! - `rate` (read/write): the rate.
//!
//! # Example
//! ```click
//! RatedSource(RATE 100, LIMIT 200, STOP true) -> rs :: RatedSplitter(50);
//! rs[0] -> Discard; rs[1] -> Discard;
//! ```
//!
//! # Implementation
//! Click's token bucket, starting full, refilled once per batch (its
//! packets arrive together): the first packets that find a token go to
//! output 0 and the rest to output 1, as two batches in order. Output 1's
//! packets are dropped if it is not connected.

use super::common::{RateConf, TokenBucket};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `RatedSplitter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RatedSplitter",
    port_count: "1/2",
    processing: "h/h",
    doc: element_doc!("standard/ratedsplitter"),
    make,
};

/// RatedSplitter and BandwidthRatedSplitter.
pub(crate) struct RatedSplitter {
    conf: RateConf,
    tb: TokenBucket,
}

pub(crate) fn make_splitter(
    ctx: &ConfigureCtx<'_>,
    bandwidth: bool,
) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let conf = RateConf::parse(&mut a, bandwidth);
    a.complete().map_err(|e| e.0)?;
    let conf = conf.map_err(|e| vec![e])?;
    Ok(Box::new(RatedSplitter {
        tb: conf.bucket(),
        conf,
    }))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    make_splitter(ctx, false)
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("rate")];

impl Element for RatedSplitter {
    fn push(&mut self, _port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        self.tb.refill(ctx.recent_ns());
        if !self.conf.bandwidth {
            let n = (self.tb.tokens() as usize).min(batch.len());
            self.tb.remove(n as u64);
            if n == batch.len() {
                ctx.push(0, batch);
            } else {
                ctx.push(0, batch.split_front(n));
                ctx.push(1, batch);
            }
            return;
        }
        let tb = &mut self.tb;
        let over = batch.split_off_if(|p| !tb.remove_if(p.len() as u64));
        ctx.push(0, batch);
        ctx.push(1, over);
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "rate").then(|| self.conf.unparse_rate())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "rate").then(|| {
            self.conf
                .set_rate(value)
                .map(|()| self.tb.assign(self.conf.rate, self.conf.capacity()))
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
