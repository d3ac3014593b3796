//! Classifies packets by byte patterns at fixed offsets.
//!
//! # Synopsis
//! `Classifier(PATTERN_1, ..., PATTERN_N)`
//!
//! # Ports
//! One push input; N push outputs, one per pattern.
//!
//! # Arguments
//! Each PATTERN is a set of space-separated clauses `OFFSET/VALUE` or
//! `OFFSET/VALUE%MASK`: OFFSET in decimal from the start of the packet
//! data, VALUE and MASK in hexadecimal with an even number of digits (MASK
//! as long as VALUE). `?` in VALUE means "any value for this nibble". A
//! clause preceded by `!` must not match. `-` matches every packet. A packet
//! goes to the output of the first pattern whose clauses all match, and is
//! dropped if none does. A clause reaching past the end of the packet does
//! not match.
//!
//! # Handlers
//! - `program` (read): the patterns with their parsed clauses.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true)
//!   -> c :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
//! c[0] -> Discard; c[1] -> Discard; c[2] -> Discard; c[3] -> Discard;
//! ```
//!
//! # Implementation
//! Patterns are pre-parsed into (offset, value, mask) byte strings and
//! tested in order; Classifier configurations are short (a handful of
//! Ethernet type tests), so no tree is built. Decisions for a batch are
//! made first; the batch is forwarded whole when every packet goes the same
//! way. `program` does not print Click's instruction listing.

use super::compile::pattern::{self, Pattern};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `Classifier` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Classifier",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("classification/classifier"),
    make,
};

const DROP: u16 = u16::MAX;

struct Classifier {
    patterns: Vec<Pattern>,
    text: Vec<String>,
    decisions: Vec<u16>,
    outs: Vec<Batch>,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let n = ctx.noutputs();
    if ctx.args.len() != n {
        return Err(vec![format!("need {n} arguments, one per output port")]);
    }
    let mut errs = Vec::new();
    let mut patterns = Vec::new();
    for (i, a) in ctx.args.iter().enumerate() {
        match pattern::parse(a) {
            Ok(p) => patterns.push(p),
            Err((pos, m)) => errs.push(format!("pattern {i}: position {pos}: {m}")),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Box::new(Classifier {
        patterns,
        text: ctx.args.clone(),
        decisions: Vec::with_capacity(linerate_runtime::MAX_BATCH),
        outs: (0..n).map(|_| Batch::new()).collect(),
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read("program")];

impl Element for Classifier {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let d = &mut self.decisions;
        d.clear();
        for p in batch.iter() {
            let data = p.data();
            let o = self.patterns.iter().position(|pat| pat.matches(data));
            d.push(o.map_or(DROP, |o| o as u16));
        }
        let first = d.first().copied().unwrap_or(DROP);
        if d.iter().all(|&x| x == first) {
            if first != DROP {
                ctx.push(first.into(), batch);
            }
            return;
        }
        for (p, &o) in batch.into_iter().zip(d.iter()) {
            if o != DROP {
                self.outs[usize::from(o)].push(p);
            }
        }
        for o in 0..self.outs.len() {
            if !self.outs[o].is_empty() {
                let b = std::mem::take(&mut self.outs[o]);
                ctx.push(o, b);
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "program").then(|| {
            self.text
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{i}: {} -> output {i}", t.trim()))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
