//! Sends every packet to one output, fixed at configuration time.
//!
//! # Synopsis
//! `StaticSwitch(OUTPUT)`
//!
//! # Ports
//! One push input; any number of push outputs.
//!
//! # Arguments
//! - `OUTPUT` (integer, mandatory): the output to use; -1 drops every
//!   packet (as does a value that names no output).
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> s :: StaticSwitch(0);
//! s[0] -> Discard; s[1] -> Discard;
//! ```
//!
//! # Implementation
//! The whole batch goes to the output at once.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `StaticSwitch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "StaticSwitch",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("standard/staticswitch"),
    make,
};

struct StaticSwitch {
    output: i32,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let output: Option<i32> = a.read_mp("OUTPUT");
    a.complete().map_err(|e| e.0)?;
    let output = super::switch::clamp_output(output.unwrap_or(-1), ctx.noutputs())
        .map_err(|e| vec![format!("OUTPUT: {e}")])?;
    Ok(Box::new(StaticSwitch { output, drops: 0 }))
}

impl Element for StaticSwitch {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        if self.output < 0 {
            self.drops += batch.len() as u64;
        } else {
            ctx.push(self.output as usize, batch);
        }
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("switched off", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
