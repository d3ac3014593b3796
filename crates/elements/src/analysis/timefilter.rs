//! Passes packets whose timestamps lie in a time range.
//!
//! # Synopsis
//! `TimeFilter([START, END,] KEYWORDS)`
//!
//! # Ports
//! One input, agnostic; output 0 agnostic; optional push output 1 receives
//! packets outside the range (dropped when absent).
//!
//! # Arguments
//! - `START` (timestamp): pass packets with timestamps at least START.
//! - `START_AFTER` (time): START relative to the first packet seen.
//! - `START_DELAY` (time): START relative to initialization time.
//! - `END` (timestamp): pass packets with timestamps before END.
//! - `END_AFTER` (time): END relative to the first packet seen.
//! - `END_DELAY` (time): END relative to initialization time.
//! - `INTERVAL` (time): END is START plus INTERVAL.
//! - `STOP` (boolean, default false): stop the driver at the first packet
//!   past END.
//! - `END_CALL` (`HANDLER [VALUE]`): call a write handler at the first
//!   packet past END; `$t` in VALUE becomes that packet's timestamp.
//!
//! At most one of START, START_AFTER, START_DELAY, and one of END,
//! END_AFTER, END_DELAY, INTERVAL; STOP and END_CALL are exclusive.
//!
//! # Handlers
//! - `start`, `end` (read/write): the range (timestamps).
//! - `interval` (read): END minus START.
//! - `extend_interval` (write): add a time to END.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true)
//!     -> TimeFilter(START_AFTER 10, INTERVAL 5) -> c :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! Two comparisons per packet on the 64-bit nanosecond timestamp; the
//! batch is split in one pass, keeping order. The END_CALL handler is
//! called once per crossing (Click repeats it while the handler extends
//! END, which an element cannot do through its own handlers here).

use linerate_args::{Seconds, Timestamp};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx};
use std::any::Any;

/// The `TimeFilter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "TimeFilter",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("analysis/timefilter"),
    make,
};

#[derive(Clone, Copy, PartialEq)]
enum Rel {
    Abs,
    FirstPacket,
    Init,
    Interval,
}

struct TimeFilter {
    first: i128,
    last: i128,
    first_rel: Rel,
    last_rel: Rel,
    ready: bool,
    last_h: Option<(String, String)>,
    last_h_ready: bool,
    has_out1: bool,
    dropped: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let start: Option<Timestamp> = a.read_p("START");
    let end: Option<Timestamp> = a.read_p("END");
    let start_delay: Option<Seconds> = a.read("START_DELAY");
    let end_delay: Option<Seconds> = a.read("END_DELAY");
    let start_after: Option<Seconds> = a.read("START_AFTER");
    let end_after: Option<Seconds> = a.read("END_AFTER");
    let interval: Option<Seconds> = a.read("INTERVAL");
    let stop = a.read_or("STOP", false);
    let end_call: Option<linerate_args::Raw> = a.read("END_CALL");
    a.complete().map_err(|e| e.0)?;
    let n = |x: bool| x as usize;
    if n(start.is_some()) + n(start_after.is_some()) + n(start_delay.is_some()) > 1 {
        return Err(vec![
            "START, START_AFTER, and START_AFTER_INIT are mutually exclusive".into(),
        ]);
    }
    if n(end.is_some()) + n(end_after.is_some()) + n(end_delay.is_some()) + n(interval.is_some())
        > 1
    {
        return Err(vec![
            "END, END_AFTER, END_AFTER_INIT, and INTERVAL are mutually exclusive".into(),
        ]);
    }
    let (first, first_rel) = if let Some(t) = start {
        (t.nanos as i128, Rel::Abs)
    } else if let Some(t) = start_delay {
        (t.nanos as i128, Rel::Init)
    } else {
        (
            start_after.map(|t| t.nanos as i128).unwrap_or(0),
            Rel::FirstPacket,
        )
    };
    let (last, last_rel) = if let Some(t) = end {
        (t.nanos as i128, Rel::Abs)
    } else if let Some(t) = end_after {
        (t.nanos as i128, Rel::FirstPacket)
    } else if let Some(t) = end_delay {
        (t.nanos as i128, Rel::Init)
    } else if let Some(t) = interval {
        (t.nanos as i128, Rel::Interval)
    } else {
        (i128::MAX / 4, Rel::Abs)
    };
    if end_call.is_some() && stop {
        return Err(vec!["END_CALL and STOP are mutually exclusive".into()]);
    }
    let last_h = if let Some(c) = end_call {
        let c = c.0.trim().to_string();
        let (h, v) = c.split_once(char::is_whitespace).unwrap_or((&c, ""));
        Some((h.to_string(), v.trim().to_string()))
    } else if stop {
        Some(("stop".to_string(), "true".to_string()))
    } else {
        None
    };
    Ok(Box::new(TimeFilter {
        first,
        last,
        first_rel,
        last_rel,
        ready: false,
        last_h_ready: last_h.is_some(),
        last_h,
        has_out1: ctx.noutputs() > 1,
        dropped: 0,
    }))
}

/// Click's timestamp text: `SEC.USEC`, with a sign for negative values.
fn unparse(ns: i128) -> String {
    let neg = ns < 0;
    let a = ns.unsigned_abs();
    let s = format!("{}.{:06}", a / 1_000_000_000, (a % 1_000_000_000) / 1000);
    if neg {
        format!("-{s}")
    } else {
        s
    }
}

fn parse_time(s: &str) -> Result<i128, String> {
    linerate_args::ArgValue::parse_arg(s.trim())
        .map(|t: Timestamp| t.nanos as i128)
        .map_err(|_: String| "expected time".to_string())
}

impl TimeFilter {
    fn first_packet(&mut self, t: i128) {
        if self.first_rel == Rel::FirstPacket {
            self.first += t;
        }
        if self.last_rel == Rel::FirstPacket {
            self.last += t;
        } else if self.last_rel == Rel::Interval {
            self.last += self.first;
        }
        self.ready = true;
    }

    #[inline]
    fn pass(&mut self, t: i128, ctx: &mut Ctx<'_>) -> bool {
        if !self.ready {
            self.first_packet(t);
        }
        if t < self.first {
            return false;
        }
        if t >= self.last && self.last_h_ready {
            if let Some((h, v)) = self.last_h.clone() {
                self.last_h_ready = false;
                let v = v.replace("$t", &unparse(t));
                if let Err(e) = ctx.call_handler(&h, Some(&v)) {
                    eprintln!("{}: {}", ctx.name(), e);
                }
            }
        }
        t < self.last
    }
}

impl Element for TimeFilter {
    fn calls_handlers(&self) -> bool {
        self.last_h.is_some()
    }

    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as i128;
        if self.first_rel == Rel::Init {
            self.first += now;
        }
        if self.last_rel == Rel::Init {
            self.last += now;
        }
        Ok(())
    }

    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let out = batch.split_off_if(|p| !self.pass(p.timestamp_ns() as i128, ctx));
        if !out.is_empty() {
            if self.has_out1 {
                ctx.push(1, out);
            } else {
                self.dropped += out.len() as u64;
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[
            HandlerSpec::read_write("start"),
            HandlerSpec::read_write("end"),
            HandlerSpec::read("interval"),
            HandlerSpec::write("extend_interval"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "start" => unparse(self.first),
            "end" => unparse(self.last),
            "interval" => unparse(self.last - self.first),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        if !matches!(name, "start" | "end" | "extend_interval") {
            return None;
        }
        let t = match parse_time(value) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        match name {
            "start" => {
                if !self.ready {
                    self.first_packet(t);
                }
                self.first = t;
            }
            "end" => {
                self.last = t;
                self.last_rel = Rel::Abs;
                self.last_h_ready = self.last_h.is_some();
            }
            _ => {
                self.last += t;
                self.last_h_ready = self.last_h.is_some();
            }
        }
        Some(Ok(()))
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("outside time range", self.dropped)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
