//! Stores packets in a FIFO queue that drops from the front when full.
//!
//! # Synopsis
//! `FrontDropQueue([CAPACITY])`
//!
//! # Ports
//! One push input; one pull output, and an optional push output 1 that
//! receives dropped packets.
//!
//! # Arguments
//! - `CAPACITY` (unsigned integer, default 1000): maximum queue length.
//!
//! When a packet arrives and the queue is full, the packet at the head of
//! the queue (the oldest) is dropped (counted in `drops`) or, if output 1
//! is connected, pushed out of it; the new packet is always enqueued.
//!
//! # Handlers
//! - `length` (read): packets in the queue now.
//! - `highwater_length` (read): the largest length seen.
//! - `capacity` (read/write): maximum length.
//! - `drops` (read): packets dropped.
//! - `reset_counts` (write): reset `drops`, and `highwater_length` to the
//!   current length.
//! - `reset` (write): drop every queued packet.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 100, STOP true) -> q :: FrontDropQueue(10) -> Unqueue -> Discard;
//! ```
//!
//! # Implementation
//! A ring buffer preallocated to the capacity; for each arriving batch the
//! number of packets to drop is computed once and they are removed from the
//! head (and, for a batch larger than the capacity, from the batch's
//! front) in one step, keeping order.

use super::queue::{QueueCore, HANDLERS};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `FrontDropQueue` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FrontDropQueue",
    port_count: "1/1-2",
    processing: "h/lh",
    doc: element_doc!("standard/frontdropqueue"),
    make,
};

struct FrontDropQueue {
    core: QueueCore,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Ok(Box::new(FrontDropQueue {
        core: QueueCore::configure(ctx)?,
    }))
}

impl Element for FrontDropQueue {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        self.core.push_front_drop(batch, ctx);
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
