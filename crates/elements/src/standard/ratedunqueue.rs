//! Pulls packets at a given rate and pushes them out.
//!
//! # Synopsis
//! `RatedUnqueue(RATE [, KEYWORDS])`
//!
//! # Ports
//! One pull input, one push output. RatedUnqueue has a task.
//!
//! # Arguments
//! - `RATE` (integer, mandatory): packets per second.
//! - `BURST_DURATION` (time): the token bucket holds RATE × BURST_DURATION
//!   tokens (default 20 ms worth).
//! - `BURST_SIZE` (integer): alternatively, the bucket size in packets.
//!
//! # Handlers
//! - `rate` (read/write): the rate; writing keeps the burst settings.
//! - `active` (read/write): whether the task runs.
//! - `count` (read): packets moved.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 100) -> Queue -> RatedUnqueue(10) -> Discard;
//! ```
//!
//! # Implementation
//! Click's token bucket, starting full: each task run pulls as many packets
//! as there are whole tokens (at most 64) as one batch. When the bucket is
//! empty the element sets its timer for the next token, so on simulated
//! time the run jumps straight to it. Time is kept in nanoseconds rather
//! than Click's jiffies.

use super::common::{RateConf, TokenBucket};
use linerate_runtime::{ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, DEFAULT_BURST};
use std::any::Any;

/// The `RatedUnqueue` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RatedUnqueue",
    port_count: "1/1",
    processing: "l/h",
    doc: element_doc!("standard/ratedunqueue"),
    make,
};

/// RatedUnqueue and BandwidthRatedUnqueue.
pub(crate) struct RatedUnqueue {
    conf: RateConf,
    tb: TokenBucket,
    active: bool,
    count: u64,
    wake: u64,
}

pub(crate) fn make_rated(
    ctx: &ConfigureCtx<'_>,
    bandwidth: bool,
) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let conf = RateConf::parse(&mut a, bandwidth);
    a.complete().map_err(|e| e.0)?;
    let conf = conf.map_err(|e| vec![e])?;
    Ok(Box::new(RatedUnqueue {
        tb: conf.bucket(),
        conf,
        active: true,
        count: 0,
        wake: 0,
    }))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    make_rated(ctx, false)
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("rate"),
    HandlerSpec::read_write("active"),
    HandlerSpec::counter("count"),
];

impl RatedUnqueue {
    fn sleep_until_tokens(&mut self, n: u64, now: u64, ctx: &mut Ctx<'_>) {
        if self.wake > now {
            return; // a timer is already set
        }
        let dt = self.tb.time_until_contains(n);
        if dt != u64::MAX {
            self.wake = now.saturating_add(dt.max(1));
            ctx.schedule_at(self.wake);
        }
    }
}

impl Element for RatedUnqueue {
    fn is_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        if !self.active {
            return false;
        }
        let now = ctx.now_ns();
        self.tb.refill(now);
        if !self.conf.bandwidth {
            let n = self.tb.tokens().min(DEFAULT_BURST as u64) as usize;
            if n == 0 {
                self.sleep_until_tokens(1, now, ctx);
                return false;
            }
            let Some(b) = ctx.pull(0, n) else {
                return false;
            };
            self.tb.remove(b.len() as u64);
            self.count += b.len() as u64;
            ctx.push(0, b);
            return true;
        }
        // Bandwidth: a packet may leave while the bucket holds the
        // threshold (room for a large packet); it costs its length.
        let thresh = super::common::BANDWIDTH_THRESH;
        let mut out: Option<linerate_runtime::Batch> = None;
        let mut n = 0;
        while n < DEFAULT_BURST && self.tb.contains(thresh) {
            let Some(b) = ctx.pull(0, 1) else { break };
            let bytes: u64 = b.iter().map(|p| p.len() as u64).sum();
            self.tb.remove(bytes);
            n += b.len();
            match &mut out {
                Some(o) => o.append(b),
                None => out = Some(b),
            }
        }
        match out {
            Some(b) => {
                self.count += b.len() as u64;
                ctx.push(0, b);
                true
            }
            None => {
                if !self.tb.contains(thresh) {
                    self.sleep_until_tokens(thresh, now, ctx);
                }
                false
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "rate" => self.conf.unparse_rate(),
            "active" => self.active.to_string(),
            "count" => self.count.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "rate" => self.conf.set_rate(value).map(|()| {
                self.tb.assign(self.conf.rate, self.conf.capacity());
                self.wake = 0;
            }),
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
