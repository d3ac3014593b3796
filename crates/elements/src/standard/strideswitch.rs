//! Sends packets to its outputs by stride scheduling.
//!
//! # Synopsis
//! `StrideSwitch(TICKETS0, ..., TICKETSN-1)`
//!
//! # Ports
//! One push input; N push outputs, one per ticket argument.
//!
//! # Arguments
//! - `TICKETSi` (integer 1 to 32768): output i's share. Output i receives
//!   TICKETSi / (sum of tickets) of the packets, evenly interleaved.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! // Two thirds of the packets to output 0, one third to output 1.
//! FromDump(in.pcap, STOP true) -> s :: StrideSwitch(2, 1);
//! s[0] -> Discard; s[1] -> Discard;
//! ```
//!
//! # Implementation
//! Click's stride scheduling: each output has a stride of 65536 / tickets
//! and a pass that starts at its stride; each packet goes to the output
//! with the smallest pass (the lowest-numbered one on ties), whose pass then
//! grows by its stride. The batch is classified into per-output batches in
//! one pass, keeping order.

use super::common::Demux;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `StrideSwitch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "StrideSwitch",
    port_count: "1/1-",
    processing: "h/h",
    doc: element_doc!("standard/strideswitch"),
    make,
};

const STRIDE1: u64 = 1 << 16;
const MAX_TICKETS: u32 = 1 << 15;

struct StrideSwitch {
    stride: Vec<u64>,
    pass: Vec<u64>,
    demux: Demux,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut errs = Vec::new();
    let mut stride = Vec::new();
    for (i, a) in ctx.args.iter().enumerate() {
        match a.trim().parse::<u32>() {
            Ok(t) if (1..=MAX_TICKETS).contains(&t) => stride.push(STRIDE1 / t as u64),
            Ok(_) => errs.push(format!(
                "TICKETS{i}: tickets must be between 1 and {MAX_TICKETS}"
            )),
            Err(_) => errs.push(format!("TICKETS{i}: expected integer")),
        }
    }
    if stride.len() != ctx.noutputs() && errs.is_empty() {
        errs.push(format!(
            "need {} arguments, one per output (got {})",
            ctx.noutputs(),
            stride.len()
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Box::new(StrideSwitch {
        pass: stride.clone(),
        demux: Demux::new(stride.len()),
        stride,
    }))
}

impl Element for StrideSwitch {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let (stride, pass) = (&self.stride, &mut self.pass);
        self.demux.run(batch, ctx, |_| {
            let mut best = 0;
            for i in 1..pass.len() {
                if pass[i] < pass[best] {
                    best = i;
                }
            }
            pass[best] += stride[best];
            best as u32
        });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
