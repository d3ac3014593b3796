//! Sends every packet to one output, chosen by a handler.
//!
//! # Synopsis
//! `Switch([OUTPUT])`
//!
//! # Ports
//! One push input; any number of push outputs.
//!
//! # Arguments
//! - `OUTPUT` (integer, default 0): the output to use; -1 drops every
//!   packet. A value of at least the number of outputs means -1.
//!
//! # Handlers
//! - `switch` (read/write): the current output; writing changes it.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> s :: Switch(1);
//! s[0] -> Discard; s[1] -> c :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! The whole batch goes to the chosen output at once.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Switch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Switch",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("standard/switch"),
    make,
};

struct Switch {
    output: i32,
    n: usize,
    drops: u64,
}

/// Parse a switch output: an integer of at least -1; values that name no
/// output mean -1 (Click's Switch).
pub(crate) fn clamp_output(v: i32, n: usize) -> Result<i32, String> {
    if v < -1 {
        return Err("output must be at least -1".to_string());
    }
    Ok(if v >= 0 && (v as usize) < n { v } else { -1 })
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let output: i32 = a.read_p_or("OUTPUT", 0);
    a.complete().map_err(|e| e.0)?;
    let output = clamp_output(output, ctx.noutputs()).map_err(|e| vec![format!("OUTPUT: {e}")])?;
    Ok(Box::new(Switch {
        output,
        n: ctx.noutputs(),
        drops: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("switch")];

impl Element for Switch {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        if self.output < 0 {
            self.drops += batch.len() as u64;
        } else {
            ctx.push(self.output as usize, batch);
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "switch").then(|| self.output.to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "switch").then(|| {
            let v = crate::parse_value::<i32>(value)
                .map_err(|_| "Switch output must be integer".to_string())?;
            self.output = clamp_output(v, self.n)?;
            Ok(())
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("switched off", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
