//! Generates packets at a given rate.
//!
//! # Synopsis
//! `RatedSource([DATA, RATE, LIMIT, ACTIVE, KEYWORDS])`
//!
//! # Ports
//! No inputs; one output, agnostic (a task in push mode; in pull mode a pull
//! returns the packets that are due).
//!
//! # Arguments
//! - `DATA` (string, default Click's 69-byte text): packet contents.
//! - `RATE` (integer, default 10): packets per second.
//! - `BANDWIDTH` (bandwidth): alternatively, bytes per second; the packet
//!   rate is BANDWIDTH / packet length.
//! - `LIMIT` (integer, default -1): total packets; -1 means no limit.
//! - `ACTIVE` (boolean, default true).
//! - `LENGTH` (integer): packet length (DATA truncated or repeated).
//! - `STOP` (boolean, default false): stop the driver after `LIMIT` packets.
//!
//! # Handlers
//! - `count` (read), `reset` (write), `active` (read/write),
//!   `rate` (read/write), `limit` (read/write).
//!
//! # Example
//! ```click
//! RatedSource(RATE 1000, LIMIT 5000, STOP true) -> Discard;
//! ```
//!
//! # Implementation
//! Packets due since the start are computed from the clock and sent as one
//! batch (at most 256); when none is due, the element sets its timer for
//! the next one, so an idle source costs nothing and simulated time jumps
//! straight to it. Packets are zero-copy views of the element's template
//! (as in InfiniteSource), copied on first write.

use super::infinitesource::{fill_template, DEFAULT_DATA};
use linerate_runtime::packet::alloc_views;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, IoCounts, MAX_BATCH,
};
use std::any::Any;

/// The `RatedSource` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RatedSource",
    port_count: "0/1",
    processing: "a/a",
    doc: element_doc!("standard/ratedsource"),
    make,
};

struct RatedSource {
    data: Vec<u8>,
    rate: f64,
    limit: i64,
    active: bool,
    stop: bool,
    push: bool,
    start: Option<u64>,
    count: u64,
    bytes: u64,
    stopped: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let data: Vec<u8> = a.read_p("DATA").unwrap_or_else(|| DEFAULT_DATA.to_vec());
    let rate: Option<u64> = a.read_p("RATE");
    let limit: i64 = a.read_p_or("LIMIT", -1);
    let active = a.read_p_or("ACTIVE", true);
    let length: Option<usize> = a.read("LENGTH");
    let datasize: Option<usize> = a.read("DATASIZE");
    let bw: Option<linerate_args::Bandwidth> = a.read("BANDWIDTH");
    let stop = a.read_or("STOP", false);
    a.complete().map_err(|e| e.0)?;
    let data = fill_template(&data, length.or(datasize));
    let rate = match (rate, bw) {
        (Some(_), Some(_)) => return Err(vec!["supply at most one of RATE and BANDWIDTH".into()]),
        (_, Some(b)) if !data.is_empty() => b.0 / data.len() as f64,
        (Some(r), _) => r as f64,
        _ => 10.0,
    };
    Ok(Box::new(RatedSource {
        data,
        rate,
        limit,
        active,
        stop,
        push: ctx.output_is_push(0),
        start: None,
        count: 0,
        bytes: 0,
        stopped: false,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::write("reset"),
    HandlerSpec::read_write("active"),
    HandlerSpec::read_write("rate"),
    HandlerSpec::read_write("limit"),
];

impl RatedSource {
    fn due(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if !self.active || self.rate <= 0.0 {
            return None;
        }
        let now = ctx.now_ns();
        let start = *self.start.get_or_insert(now);
        let mut n =
            (((now - start) as f64 * self.rate / 1e9) as u64 + 1).saturating_sub(self.count);
        if self.limit >= 0 {
            let left = (self.limit as u64).saturating_sub(self.count);
            if left == 0 {
                if self.stop && !self.stopped {
                    self.stopped = true;
                    ctx.stop_router();
                }
                return None;
            }
            n = n.min(left);
        }
        if n == 0 {
            let next = start + ((self.count as f64) * 1e9 / self.rate).ceil() as u64;
            ctx.schedule_at(next.max(now + 1));
            return None;
        }
        let n = (n as usize).min(max);
        let mut b = Batch::new();
        // SAFETY: the template is owned by this element, which lives as long
        // as the router and so longer than any packet that may be read.
        unsafe { alloc_views(&self.data, n, now, b.vec_mut()) };
        self.count += n as u64;
        self.bytes += (n * self.data.len()) as u64;
        Some(b)
    }
}

impl Element for RatedSource {
    fn is_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match self.due(MAX_BATCH, ctx) {
            Some(b) => {
                ctx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        self.due(max, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "active" => self.active.to_string(),
            "rate" => self.rate.to_string(),
            "limit" => self.limit.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                self.start = None;
                self.stopped = false;
                Ok(())
            }
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "rate" => crate::parse_value::<u64>(value).map(|v| {
                self.rate = v as f64;
                self.start = None;
                self.count = 0;
            }),
            "limit" => crate::parse_value::<i64>(value).map(|v| self.limit = v),
            _ => return None,
        })
    }

    fn io_counts(&self) -> Option<IoCounts> {
        Some(IoCounts {
            source: true,
            packets: self.count,
            bytes: self.bytes,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
