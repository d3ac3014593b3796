//! Copies packets with a given paint annotation to output 1.
//!
//! # Synopsis
//! `PaintTee(COLOR [, ANNO])`
//!
//! # Ports
//! One push input; two push outputs.
//!
//! # Arguments
//! - `COLOR` (integer, mandatory): the colour to copy.
//! - `ANNO` (annotation, default `PAINT`): the annotation to check.
//!
//! # Handlers
//! - `color` (read/write): the colour.
//!
//! # Example
//! ```click
//! // Copy packets that are about to leave on the interface they came from.
//! FromDump(in.pcap, STOP true) -> Paint(1) -> pt :: PaintTee(1) -> Discard;
//! pt[1] -> Discard;
//! ```
//!
//! # Implementation
//! Every packet goes to output 0; a clone (shared data, copy-on-write) of
//! each packet with the colour goes to output 1. The clones are sent first,
//! as Click sends each packet's copy before the packet.

use super::common::anno_get;
use linerate_runtime::anno::AnnoInfo;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `PaintTee` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "PaintTee",
    port_count: "1/2",
    processing: "h/h",
    doc: element_doc!("standard/painttee"),
    make,
};

struct PaintTee {
    color: u32,
    anno: AnnoInfo,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let (color, anno) = super::paint::color_args(&ctx.args)?;
    Ok(Box::new(PaintTee { color, anno }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("color")];

impl Element for PaintTee {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let (c, a) = (self.color, self.anno);
        let copies: Batch = batch
            .iter()
            .filter(|p| anno_get(p, a) == c)
            .cloned()
            .collect();
        ctx.push(1, copies);
        ctx.push(0, batch);
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

    fn as_any(&self) -> &dyn Any {
        self
    }
}
