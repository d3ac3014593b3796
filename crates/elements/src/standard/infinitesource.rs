//! Generates packets as fast as it is scheduled.
//!
//! # Synopsis
//! `InfiniteSource([DATA, LIMIT, BURST, ACTIVE, KEYWORDS])`
//!
//! # Ports
//! No inputs; one output, agnostic. In push mode InfiniteSource has a task
//! that pushes `BURST` packets per run; in pull mode it answers pulls.
//!
//! # Arguments
//! - `DATA` (string, default Click's 69-byte text): packet contents.
//! - `LIMIT` (integer, default -1): total packets to send; -1 means no limit.
//! - `BURST` (integer, default 64): packets per task run, sent as one batch.
//!   Click's default is 1; the packet stream is the same, only the scheduling
//!   granularity differs.
//! - `ACTIVE` (boolean, default true): whether the task runs.
//! - `LENGTH` (integer): packet length; `DATA` is truncated, or repeated to
//!   fill (Click's `DATASIZE` is accepted as a synonym).
//! - `STOP` (boolean, default false): stop the driver when `LIMIT` is reached.
//! - `TIMESTAMP` (boolean, default true): set each packet's timestamp
//!   annotation. The clock is read once per batch, so all packets of a batch
//!   carry the same timestamp.
//!
//! In replicated mode each replica sends its share of `LIMIT`.
//!
//! # Handlers
//! - `count` (read): packets sent.
//! - `reset` (write): reset the count and restart.
//! - `active` (read/write), `limit` (read/write), `burst` (read/write).
//!
//! # Example
//! ```click
//! InfiniteSource(LENGTH 64, LIMIT 20000000, STOP true) -> Discard;
//! ```
//!
//! # Implementation
//! Packets are allocated from the per-thread pool as zero-copy views of the
//! element's template (`alloc_views`), one batch per task run; the first
//! element that writes to a packet gets a private copy in the packet's own
//! buffer. Nothing is allocated on the heap.

use linerate_runtime::packet::alloc_views;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, IoCounts};
use std::any::Any;

/// The `InfiniteSource` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "InfiniteSource",
    port_count: "0/1",
    processing: "a/a",
    doc: element_doc!("standard/infinitesource"),
    make,
};

/// Click's default InfiniteSource payload.
pub const DEFAULT_DATA: &[u8] =
    b"Random bullshit in a packet, at least 64 bytes long. Well, now it is.";

struct InfiniteSource {
    data: Vec<u8>,
    limit: i64,
    burst: usize,
    active: bool,
    stop: bool,
    timestamp: bool,
    count: u64,
    bytes: u64,
    push: bool,
    stopped: bool,
}

/// Build the packet template: `data` truncated or repeated to `length`.
pub fn fill_template(data: &[u8], length: Option<usize>) -> Vec<u8> {
    match length {
        None => data.to_vec(),
        Some(n) if data.is_empty() => vec![0; n],
        Some(n) => data.iter().copied().cycle().take(n).collect(),
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let data: Vec<u8> = a.read_p("DATA").unwrap_or_else(|| DEFAULT_DATA.to_vec());
    let mut limit: i64 = a.read_p_or("LIMIT", -1);
    let burst: i64 = a.read_p_or("BURST", ctx.default_burst as i64);
    let active = a.read_p_or("ACTIVE", true);
    let length: Option<usize> = a.read("LENGTH");
    let datasize: Option<usize> = a.read("DATASIZE");
    let stop = a.read_or("STOP", false);
    let timestamp = a.read_or("TIMESTAMP", true);
    a.complete().map_err(|e| e.0)?;
    if burst < 1 {
        return Err(vec!["BURST must be at least 1".into()]);
    }
    let (r, n) = ctx.replica;
    if limit >= 0 && n > 1 {
        let (q, rem) = (limit / n as i64, limit % n as i64);
        limit = q + i64::from((r as i64) < rem);
    }
    Ok(Box::new(InfiniteSource {
        data: fill_template(&data, length.or(datasize)),
        limit,
        burst: burst as usize,
        active,
        stop,
        timestamp,
        count: 0,
        bytes: 0,
        push: ctx.output_is_push(0),
        stopped: false,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::write("reset"),
    HandlerSpec::read_write("active"),
    HandlerSpec::read_write("limit"),
    HandlerSpec::read_write("burst"),
];

impl InfiniteSource {
    fn make_batch(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if !self.active {
            return None;
        }
        let mut n = max;
        if self.limit >= 0 {
            let left = (self.limit as u64).saturating_sub(self.count);
            if left == 0 {
                if self.stop && !self.stopped {
                    self.stopped = true;
                    ctx.stop_router();
                }
                return None;
            }
            n = n.min(left as usize);
        }
        let ts = if self.timestamp { ctx.recent_ns() } else { 0 };
        let mut b = Batch::new();
        // SAFETY: the template is owned by this element, which lives as long
        // as the router and so longer than any packet that may be read.
        unsafe { alloc_views(&self.data, n, ts, b.vec_mut()) };
        self.count += n as u64;
        self.bytes += (n * self.data.len()) as u64;
        Some(b)
    }
}

impl Element for InfiniteSource {
    fn is_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match self.make_batch(self.burst, ctx) {
            Some(b) => {
                ctx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        self.make_batch(max, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "active" => self.active.to_string(),
            "limit" => self.limit.to_string(),
            "burst" => self.burst.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                self.stopped = false;
                Ok(())
            }
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "limit" => crate::parse_value::<i64>(value).map(|v| self.limit = v),
            "burst" => crate::parse_value::<usize>(value).map(|v| self.burst = v.max(1)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_is_truncated_or_repeated() {
        assert_eq!(DEFAULT_DATA.len(), 69);
        assert_eq!(fill_template(b"abc", Some(7)), b"abcabca");
        assert_eq!(fill_template(b"abcdef", Some(2)), b"ab");
        assert_eq!(fill_template(b"", Some(3)), vec![0, 0, 0]);
        assert_eq!(fill_template(b"xy", None), b"xy");
    }
}
