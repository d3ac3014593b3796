//! Sends packets to its outputs in turn.
//!
//! # Synopsis
//! `RoundRobinSwitch`
//!
//! # Ports
//! One push input; one or more push outputs.
//!
//! # Arguments
//! None.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> rr :: RoundRobinSwitch;
//! rr[0] -> Discard; rr[1] -> Discard;
//! ```
//!
//! # Implementation
//! The first packet goes to output 0, the next to output 1, and so on,
//! wrapping around; the turn carries over from batch to batch. The batch is
//! classified into per-output batches in one pass, keeping order.

use super::common::Demux;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `RoundRobinSwitch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RoundRobinSwitch",
    port_count: "1/1-",
    processing: "h/h",
    doc: element_doc!("standard/roundrobinswitch"),
    make,
};

struct RoundRobinSwitch {
    next: u32,
    n: u32,
    demux: Demux,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    linerate_args::Args::new(&ctx.args)
        .complete()
        .map_err(|e| e.0)?;
    Ok(Box::new(RoundRobinSwitch {
        next: 0,
        n: ctx.noutputs().max(1) as u32,
        demux: Demux::new(ctx.noutputs().max(1)),
    }))
}

impl Element for RoundRobinSwitch {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let n = self.n;
        let next = &mut self.next;
        self.demux.run(batch, ctx, |_| {
            let o = *next;
            *next = if o + 1 >= n { 0 } else { o + 1 };
            o
        });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
