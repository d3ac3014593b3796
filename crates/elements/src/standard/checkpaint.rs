//! Checks packets' paint annotation.
//!
//! # Synopsis
//! `CheckPaint(COLOR [, ANNO])`
//!
//! # Ports
//! One input; one or two outputs; agnostic input and output 0, push
//! output 1.
//!
//! # Arguments
//! - `COLOR` (integer, mandatory): the expected colour.
//! - `ANNO` (annotation, default `PAINT`): the annotation to check.
//!
//! # Handlers
//! - `color` (read/write): the colour.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Paint(1) -> cp :: CheckPaint(1) -> Discard;
//! cp[1] -> Discard;
//! ```
//!
//! # Implementation
//! Packets with the colour continue on output 0; the others go to output 1
//! if it is connected, and are dropped otherwise (counted as `bad paint`).
//! The batch is split in one pass keeping order.

use super::common::anno_get;
use linerate_runtime::anno::AnnoInfo;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `CheckPaint` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckPaint",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("standard/checkpaint"),
    make,
};

struct CheckPaint {
    color: u32,
    anno: AnnoInfo,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let (color, anno) = super::paint::color_args(&ctx.args)?;
    Ok(Box::new(CheckPaint {
        color,
        anno,
        drops: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("color")];

impl Element for CheckPaint {
    #[inline]
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let (c, a) = (self.color, self.anno);
        if batch.iter().all(|p| anno_get(p, a) == c) {
            return batch;
        }
        let bad = batch.split_off_if(|p| anno_get(p, a) != c);
        if ctx.noutputs() > 1 {
            ctx.push(1, bad);
        } else {
            self.drops += bad.len() as u64;
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "color").then(|| self.color.to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "color").then(|| crate::parse_value::<u32>(value).map(|v| self.color = v))
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("bad paint", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
