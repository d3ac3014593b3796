//! Pulls from one of several inputs, chosen by a handler.
//!
//! # Synopsis
//! `PullSwitch([INPUT])`
//!
//! # Ports
//! Any number of pull inputs; one pull output.
//!
//! # Arguments
//! - `INPUT` (integer, default 0): the input to pull from; -1 means no
//!   packets are passed (as does a value that names no input).
//!
//! # Handlers
//! - `switch` (read/write): the current input; writing changes it.
//!
//! # Example
//! ```click
//! a :: Queue; b :: Queue;
//! InfiniteSource(LIMIT 10) -> a; InfiniteSource(LIMIT 10) -> b;
//! ps :: PullSwitch(1); a -> [0]ps; b -> [1]ps;
//! ps -> Unqueue -> Discard;
//! ```
//!
//! # Implementation
//! A pull forwards the whole request to the selected input.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `PullSwitch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "PullSwitch",
    port_count: "-/1",
    processing: "l/l",
    doc: element_doc!("standard/pullswitch"),
    make,
};

struct PullSwitch {
    input: i32,
    n: usize,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let input: i32 = a.read_p_or("INPUT", 0);
    a.complete().map_err(|e| e.0)?;
    let input = super::switch::clamp_output(input, ctx.ninputs())
        .map_err(|e| vec![format!("INPUT: {e}")])?;
    Ok(Box::new(PullSwitch {
        input,
        n: ctx.ninputs(),
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("switch")];

impl Element for PullSwitch {
    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if self.input < 0 {
            return None;
        }
        ctx.pull(self.input as usize, max)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "switch").then(|| self.input.to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "switch").then(|| {
            let v = crate::parse_value::<i32>(value)
                .map_err(|_| "PullSwitch input must be integer".to_string())?;
            self.input = super::switch::clamp_output(v, self.n)?;
            Ok(())
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
