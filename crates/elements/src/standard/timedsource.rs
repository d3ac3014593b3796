//! Generates one packet at regular intervals.
//!
//! # Synopsis
//! `TimedSource([INTERVAL, DATA, KEYWORDS])`
//!
//! # Ports
//! No inputs; one push output.
//!
//! # Arguments
//! - `INTERVAL` (time, default 500ms): time between packets.
//! - `DATA` (string, default Click's text): packet contents.
//! - `LIMIT` (integer, default -1): total packets; -1 means no limit.
//! - `STOP` (boolean, default false): stop the driver after `LIMIT` packets.
//! - `ACTIVE` (boolean, default true).
//! - `LENGTH` (integer): packet length (DATA truncated or repeated).
//!
//! # Handlers
//! - `count` (read), `reset` (write), `active` (read/write),
//!   `interval` (read/write), `data` (read).
//!
//! # Example
//! ```click
//! TimedSource(1s, "hello", LIMIT 3, STOP true) -> Discard;
//! ```
//!
//! # Implementation
//! Timer-driven: no task, no cost between packets; on simulated time the run
//! jumps from packet to packet.

use super::infinitesource::{fill_template, DEFAULT_DATA};
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, IoCounts, Packet,
};
use std::any::Any;

/// The `TimedSource` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "TimedSource",
    port_count: "0/1",
    processing: "h/h",
    doc: element_doc!("standard/timedsource"),
    make,
};

struct TimedSource {
    interval: u64,
    data: Vec<u8>,
    limit: i64,
    stop: bool,
    active: bool,
    started: bool,
    count: u64,
    bytes: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let interval: Option<linerate_args::Seconds> = a.read_p("INTERVAL");
    let data: Vec<u8> = a.read_p("DATA").unwrap_or_else(|| DEFAULT_DATA.to_vec());
    let limit: i64 = a.read_or("LIMIT", -1);
    let stop = a.read_or("STOP", false);
    let active = a.read_or("ACTIVE", true);
    let length: Option<usize> = a.read("LENGTH");
    a.complete().map_err(|e| e.0)?;
    let interval = interval.map(|s| s.nanos).unwrap_or(500_000_000).max(1);
    Ok(Box::new(TimedSource {
        interval,
        data: fill_template(&data, length),
        limit,
        stop,
        active,
        started: false,
        count: 0,
        bytes: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::write("reset"),
    HandlerSpec::read_write("active"),
    HandlerSpec::read_write("interval"),
    HandlerSpec::read("data"),
];

impl Element for TimedSource {
    fn is_task(&self) -> bool {
        // A one-shot task that arms the timer when the run starts.
        !self.started
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        if !self.started {
            self.started = true;
            ctx.schedule_after(self.interval);
        }
        false
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        if self.limit >= 0 && self.count >= self.limit as u64 {
            if self.stop {
                ctx.stop_router();
            }
            return;
        }
        if self.active {
            let mut p = Packet::from_slice(&self.data);
            p.set_timestamp_ns(ctx.now_ns());
            self.count += 1;
            self.bytes += p.len() as u64;
            ctx.push(0, Batch::single(p));
        }
        if self.limit >= 0 && self.count >= self.limit as u64 && self.stop {
            ctx.stop_router();
            return;
        }
        ctx.schedule_after(self.interval);
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "active" => self.active.to_string(),
            "interval" => format!(
                "{}",
                linerate_args::Seconds {
                    nanos: self.interval
                }
            ),
            "data" => String::from_utf8_lossy(&self.data).into_owned(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                Ok(())
            }
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "interval" => crate::parse_value::<linerate_args::Seconds>(value)
                .map(|v| self.interval = v.nanos.max(1)),
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
