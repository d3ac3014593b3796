//! Stores packets in a FIFO queue: the boundary between push and pull.
//!
//! # Synopsis
//! `Queue([CAPACITY])`
//!
//! # Ports
//! One push input; one pull output, and an optional push output 1 that
//! receives packets dropped because the queue was full.
//!
//! # Arguments
//! - `CAPACITY` (unsigned integer, default 1000): maximum queue length.
//!
//! # Handlers
//! - `length` (read): packets in the queue now.
//! - `highwater_length` (read): the largest length seen.
//! - `capacity` (read/write): maximum length.
//! - `drops` (read): packets dropped because the queue was full.
//! - `reset_counts` (write): reset `drops` and `highwater_length`.
//! - `reset` (write): drop every queued packet.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> q :: Queue(200) -> Unqueue -> Discard;
//! ```
//!
//! # Implementation
//! A ring buffer (`VecDeque`) preallocated to the capacity; a batch is
//! enqueued and dequeued in one pass. A Queue whose input is fed from another
//! thread receives its packets through the router's lock-free ring, so Queue
//! itself needs no locks (Click's ThreadSafeQueue is not needed).

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::VecDeque;

/// The `Queue` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Queue",
    port_count: "1/1-2",
    processing: "h/lh",
    doc: element_doc!("standard/queue"),
    make,
};

struct Queue {
    q: VecDeque<Packet>,
    capacity: usize,
    highwater: usize,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let capacity = a.read_p_or("CAPACITY", 1000usize);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(Queue {
        q: VecDeque::with_capacity(capacity.min(1 << 20)),
        capacity,
        highwater: 0,
        drops: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::gauge("length"),
    HandlerSpec::gauge("highwater_length"),
    HandlerSpec::read_write("capacity"),
    HandlerSpec::counter("drops"),
    HandlerSpec::write("reset_counts"),
    HandlerSpec::write("reset"),
];

impl Element for Queue {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let room = self.capacity.saturating_sub(self.q.len());
        let mut it = batch.into_iter();
        self.q.extend(it.by_ref().take(room));
        self.highwater = self.highwater.max(self.q.len());
        let rest: Batch = it.collect();
        if !rest.is_empty() {
            self.drops += rest.len() as u64;
            if ctx.noutputs() > 1 {
                ctx.push(1, rest);
            }
        }
    }

    fn pull(&mut self, _port: usize, max: usize, _ctx: &mut Ctx<'_>) -> Option<Batch> {
        if self.q.is_empty() {
            return None;
        }
        let n = max.min(self.q.len());
        Some(self.q.drain(..n).collect())
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "length" => self.q.len().to_string(),
            "highwater_length" => self.highwater.to_string(),
            "capacity" => self.capacity.to_string(),
            "drops" => self.drops.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "capacity" => crate::parse_value::<usize>(value).map(|c| self.capacity = c),
            "reset_counts" => {
                self.drops = 0;
                self.highwater = self.q.len();
                Ok(())
            }
            "reset" => {
                self.q.clear();
                Ok(())
            }
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("queue full", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
