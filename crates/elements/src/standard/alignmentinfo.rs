//! Tells elements about packet data alignment (an information element).
//!
//! # Synopsis
//! `AlignmentInfo(ELEMENT [MODULUS OFFSET ...], ...)`
//!
//! # Ports
//! None.
//!
//! # Arguments
//! Each argument is an element name followed by pairs of integers: the
//! alignment (modulus and offset) of packet data arriving on that element's
//! inputs 0, 1, and so on. Click's `click-align` tool writes these.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! AlignmentInfo(c 4 2);
//! InfiniteSource(LIMIT 1, STOP true) -> c :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! The arguments are checked and kept; linerate's elements never need
//! aligned data (they read headers with unaligned loads), so nothing
//! consults them.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};
use std::any::Any;

/// The `AlignmentInfo` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "AlignmentInfo",
    port_count: "0/0",
    processing: "a/a",
    doc: element_doc!("standard/alignmentinfo"),
    make,
};

struct AlignmentInfo;

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut errs = Vec::new();
    for (i, a) in ctx.args.iter().enumerate() {
        let mut words = a.split_whitespace();
        if words.next().is_none() {
            continue;
        }
        let nums: Vec<&str> = words.collect();
        if !nums.len().is_multiple_of(2) || nums.iter().any(|w| w.parse::<i64>().is_err()) {
            errs.push(format!(
                "argument {}: expected 'ELEMENT [MODULUS OFFSET]...'",
                i + 1
            ));
        }
    }
    if errs.is_empty() {
        Ok(Box::new(AlignmentInfo))
    } else {
        Err(errs)
    }
}

impl Element for AlignmentInfo {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
