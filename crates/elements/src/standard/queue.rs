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
//! Packets arriving when the queue is full are dropped (counted in `drops`)
//! or, if output 1 is connected, pushed out of it.
//!
//! # Handlers
//! - `length` (read): packets in the queue now.
//! - `highwater_length` (read): the largest length seen.
//! - `capacity` (read/write): maximum length.
//! - `drops` (read): packets dropped because the queue was full.
//! - `reset_counts` (write): reset `drops`, and `highwater_length` to the
//!   current length.
//! - `reset` (write): drop every queued packet (Click sends them to output
//!   1; a handler cannot push here, so they are freed).
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
    core: QueueCore,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Ok(Box::new(Queue {
        core: QueueCore::configure(ctx)?,
    }))
}

/// The state and handlers shared by Queue, SimpleQueue and FrontDropQueue.
pub(crate) struct QueueCore {
    q: VecDeque<Packet>,
    capacity: usize,
    highwater: usize,
    drops: u64,
}

/// The handlers of Click's queues.
pub(crate) const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::gauge("length"),
    HandlerSpec::gauge("highwater_length"),
    HandlerSpec::read_write("capacity"),
    HandlerSpec::counter("drops"),
    HandlerSpec::write("reset_counts"),
    HandlerSpec::write("reset"),
];

impl QueueCore {
    /// Parse `[CAPACITY]` (default 1000).
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<QueueCore, Vec<String>> {
        let mut a = linerate_args::Args::new(&ctx.args);
        let capacity = a.read_p_or("CAPACITY", 1000u32) as usize;
        a.complete().map_err(|e| e.0)?;
        Ok(QueueCore {
            q: VecDeque::with_capacity(capacity.min(1 << 20)),
            capacity,
            highwater: 0,
            drops: 0,
        })
    }

    fn dropped(&mut self, b: Batch, ctx: &mut Ctx<'_>) {
        if !b.is_empty() {
            self.drops += b.len() as u64;
            if ctx.noutputs() > 1 {
                ctx.push(1, b);
            }
        }
    }

    /// Enqueue at the tail; packets that do not fit are dropped (tail drop).
    pub fn push_tail_drop(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let room = self.capacity.saturating_sub(self.q.len());
        if batch.len() <= room {
            self.q.extend(batch.drain());
        } else {
            let fit = batch.split_front(room);
            self.q.extend(fit);
            self.dropped(batch, ctx);
        }
        self.highwater = self.highwater.max(self.q.len());
    }

    /// Enqueue at the tail; when full, the oldest packets are dropped.
    pub fn push_front_drop(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let total = self.q.len() + batch.len();
        if total > self.capacity {
            let mut excess = total - self.capacity;
            let from_q = excess.min(self.q.len());
            let mut gone: Batch = self.q.drain(..from_q).collect();
            excess -= from_q;
            gone.append(batch.split_front(excess));
            self.dropped(gone, ctx);
        }
        self.q.extend(batch.drain());
        self.highwater = self.highwater.max(self.q.len());
    }

    /// Dequeue up to `max` packets from the head.
    pub fn pull(&mut self, max: usize) -> Option<Batch> {
        if self.q.is_empty() {
            return None;
        }
        let n = max.min(self.q.len());
        Some(self.q.drain(..n).collect())
    }

    /// Read one of [`HANDLERS`].
    pub fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "length" => self.q.len().to_string(),
            "highwater_length" => self.highwater.to_string(),
            "capacity" => self.capacity.to_string(),
            "drops" => self.drops.to_string(),
            _ => return None,
        })
    }

    /// Write one of [`HANDLERS`].
    pub fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "capacity" => crate::parse_value::<u32>(value).map(|c| self.capacity = c as usize),
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

    /// For the end-of-run summary.
    pub fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("queue full", self.drops)]
    }
}

impl Element for Queue {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        self.core.push_tail_drop(batch, ctx);
    }

    fn pull(&mut self, _port: usize, max: usize, _ctx: &mut Ctx<'_>) -> Option<Batch> {
        self.core.pull(max)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        self.core.read_handler(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        self.core.write_handler(name, value)
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        self.core.drops()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
