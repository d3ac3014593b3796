//! Limits packets to a maximum length.
//!
//! # Synopsis
//! `Truncate(LENGTH [, EXTRA_LENGTH])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `LENGTH` (unsigned, mandatory): maximum packet length.
//! - `EXTRA_LENGTH` (boolean, default true): add the number of bytes
//!   removed to the packet's extra length annotation (`EXTRA_LENGTH`).
//!
//! # Handlers
//! - `length` (read/write): `LENGTH`.
//! - `extra_length` (read/write): `EXTRA_LENGTH`.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Truncate(96) -> ToDump(heads.pcap);
//! ```
//!
//! # Implementation
//! Shortens each packet's length in place; no bytes are copied.

use linerate_runtime::anno::offsets::EXTRA_LENGTH;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Truncate` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Truncate",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/truncate"),
    make,
};

struct Truncate {
    len: usize,
    extra: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let len: Option<u32> = a.read_mp("LENGTH");
    let extra = a.read_p_or("EXTRA_LENGTH", true);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(Truncate {
        len: len.unwrap_or(0) as usize,
        extra,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("length"),
    HandlerSpec::read_write("extra_length"),
];

impl Element for Truncate {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let (len, extra) = (self.len, self.extra);
        for p in batch.iter_mut() {
            let n = p.len();
            if n > len {
                p.take(n - len);
                if extra {
                    let a = p.anno_mut();
                    let e = a.u32(EXTRA_LENGTH).wrapping_add((n - len) as u32);
                    a.set_u32(EXTRA_LENGTH, e);
                }
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "length" => self.len.to_string(),
            "extra_length" => self.extra.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "length" => crate::parse_value::<u32>(value).map(|v| self.len = v as usize),
            "extra_length" => crate::parse_value::<bool>(value).map(|v| self.extra = v),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
