//! Sends packets to outputs chosen by a hash of some of their bytes.
//!
//! # Synopsis
//! `HashSwitch(OFFSET, LENGTH)`
//!
//! # Ports
//! One push input; one or more push outputs.
//!
//! # Arguments
//! - `OFFSET` (unsigned, mandatory): first byte hashed.
//! - `LENGTH` (unsigned, mandatory, > 0): number of bytes hashed.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! // IP packets spread by destination address.
//! FromDump(in.pcap, STOP true) -> Strip(14) -> h :: HashSwitch(16, 4);
//! h[0] -> Discard; h[1] -> Discard;
//! ```
//!
//! # Implementation
//! Click's hash: the sum of the bytes; with 2, 4 or 8 outputs the output is
//! `(d ^ (d >> 4)) & (n - 1)`, otherwise `d % n`. Packets too short for the
//! hashed range go to output 0, as in Click. The batch is classified into
//! per-output batches in one pass, keeping order.

use super::common::Demux;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass};
use std::any::Any;

/// The `HashSwitch` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "HashSwitch",
    port_count: "1/1-",
    processing: "h/h",
    doc: element_doc!("standard/hashswitch"),
    make,
};

struct HashSwitch {
    offset: usize,
    length: usize,
    n: u32,
    demux: Demux,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let offset: Option<u32> = a.read_mp("OFFSET");
    let length: Option<u32> = a.read_mp("LENGTH");
    a.complete().map_err(|e| e.0)?;
    let length = length.unwrap_or(0) as usize;
    if length == 0 {
        return Err(vec!["length must be > 0".to_string()]);
    }
    Ok(Box::new(HashSwitch {
        offset: offset.unwrap_or(0) as usize,
        length,
        n: ctx.noutputs().max(1) as u32,
        demux: Demux::new(ctx.noutputs().max(1)),
    }))
}

impl Element for HashSwitch {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let (o, l, n) = (self.offset, self.length, self.n);
        self.demux.run(batch, ctx, |p| {
            let Some(bytes) = p.data().get(o..o + l) else {
                return 0;
            };
            let d: u32 = bytes.iter().map(|&b| b as u32).sum();
            if matches!(n, 2 | 4 | 8) {
                (d ^ (d >> 4)) & (n - 1)
            } else {
                d % n
            }
        });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
