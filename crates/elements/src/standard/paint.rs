//! Sets the paint annotation (or another annotation) to a colour.
//!
//! # Synopsis
//! `Paint(COLOR [, ANNO])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `COLOR` (integer, mandatory): the value to store, 0-255 for a one-byte
//!   annotation.
//! - `ANNO` (annotation, default `PAINT`): which annotation to set; a Click
//!   annotation name or a byte offset. One-, two- and four-byte annotations
//!   are supported.
//!
//! # Handlers
//! - `color` (read/write): the colour.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Paint(2) -> ps :: PaintSwitch;
//! ps[0] -> Discard; ps[1] -> Discard; ps[2] -> Discard;
//! ```
//!
//! # Implementation
//! One store per packet into the annotation block; no data is touched.

use super::common::{anno_set, parse_anno};
use linerate_runtime::anno::AnnoInfo;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Paint` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Paint",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/paint"),
    make,
};

struct Paint {
    color: u32,
    anno: AnnoInfo,
}

/// Parse `COLOR [, ANNO]` as Paint, CheckPaint and PaintTee do.
pub(crate) fn color_args(args: &[String]) -> Result<(u32, AnnoInfo), Vec<String>> {
    let mut a = linerate_args::Args::new(args);
    let color: Option<u32> = a.read_mp("COLOR");
    let anno: Option<linerate_args::Raw> = a.read_p("ANNO");
    a.complete().map_err(|e| e.0)?;
    let anno = match anno {
        Some(t) => parse_anno(&t.0, 4).map_err(|e| vec![format!("ANNO: {e}")])?,
        None => parse_anno("PAINT", 1).expect("PAINT exists"),
    };
    let color = color.unwrap_or(0);
    if anno.size < 4 && color >= 1u32 << (8 * anno.size) {
        return Err(vec![format!(
            "COLOR: out of range for a {}-byte annotation",
            anno.size
        )]);
    }
    Ok((color, anno))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let (color, anno) = color_args(&ctx.args)?;
    Ok(Box::new(Paint { color, anno }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("color")];

impl Element for Paint {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let (c, a) = (self.color, self.anno);
        for p in batch.iter_mut() {
            anno_set(p, a, c);
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
        (name == "color").then(|| {
            let v = crate::parse_value::<u32>(value)?;
            if self.anno.size < 4 && v >= 1u32 << (8 * self.anno.size) {
                return Err("color out of range".to_string());
            }
            self.color = v;
            Ok(())
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
