//! Adds or removes bytes at the head and tail of packets.
//!
//! # Synopsis
//! `Resize(HEAD, TAIL)`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `HEAD` (integer, default 0): bytes to add at the front (negative:
//!   remove).
//! - `TAIL` (integer, default 0): bytes to add at the end (negative:
//!   remove).
//!
//! Added bytes are zero; removals stop at the packet's length.
//!
//! # Handlers
//! - `head` (read/write), `tail` (read/write).
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Resize(-14, 4) -> Discard;
//! ```
//!
//! # Implementation
//! Uses the packet's headroom and tailroom, reallocating only when they are
//! too small.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Resize` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Resize",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/resize"),
    make,
};

const MAX_ADD: i32 = 65536;

struct Resize {
    head: i32,
    tail: i32,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let head: i32 = a.read_p_or("HEAD", 0);
    let tail: i32 = a.read_p_or("TAIL", 0);
    a.complete().map_err(|e| e.0)?;
    if head > MAX_ADD || tail > MAX_ADD {
        return Err(vec![format!("HEAD and TAIL must be at most {MAX_ADD}")]);
    }
    Ok(Box::new(Resize { head, tail }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("head"),
    HandlerSpec::read_write("tail"),
];

impl Element for Resize {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let (h, t) = (self.head, self.tail);
        for p in batch.iter_mut() {
            if h > 0 {
                p.push(h as usize);
                p.data_mut()[..h as usize].fill(0);
            } else if h < 0 {
                p.pull(h.unsigned_abs() as usize);
            }
            if t > 0 {
                p.put(t as usize);
            } else if t < 0 {
                p.take(t.unsigned_abs() as usize);
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "head" => self.head.to_string(),
            "tail" => self.tail.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let v = match crate::parse_value::<i32>(value) {
            Ok(v) if v <= MAX_ADD => Ok(v),
            Ok(_) => Err(format!("at most {MAX_ADD}")),
            Err(e) => Err(e),
        };
        Some(match name {
            "head" => v.map(|v| self.head = v),
            "tail" => v.map(|v| self.tail = v),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
