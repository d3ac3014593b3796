//! Sends packets to the output named by their paint annotation.
//!
//! # Synopsis
//! `PaintSwitch([ANNO])`
//!
//! # Ports
//! One push input; any number of push outputs.
//!
//! # Arguments
//! - `ANNO` (annotation, default `PAINT`): the annotation holding the output
//!   number (one, two or four bytes).
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Paint(1) -> ps :: PaintSwitch;
//! ps[0] -> Discard; ps[1] -> Discard;
//! ```
//!
//! # Implementation
//! The batch is classified into per-output batches in one pass, keeping
//! order; a batch whose packets all have the same colour is forwarded
//! whole. Packets whose annotation names no output are dropped (counted as
//! `no output`), as in Click.

use super::common::{anno_get, parse_anno, Demux};
use linerate_runtime::anno::AnnoInfo;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `PaintSwitch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "PaintSwitch",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("standard/paintswitch"),
    make,
};

struct PaintSwitch {
    anno: AnnoInfo,
    demux: Demux,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let anno: Option<linerate_args::Raw> = a.read_p("ANNO");
    a.complete().map_err(|e| e.0)?;
    let anno = parse_anno(anno.as_ref().map_or("PAINT", |r| r.0.as_str()), 4)
        .map_err(|e| vec![format!("ANNO: {e}")])?;
    Ok(Box::new(PaintSwitch {
        anno,
        demux: Demux::new(ctx.noutputs()),
        drops: 0,
    }))
}

impl Element for PaintSwitch {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let a = self.anno;
        self.drops += self.demux.run(batch, ctx, |p| anno_get(p, a));
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("no output", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
