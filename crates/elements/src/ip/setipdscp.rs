//! Sets the DSCP field of IP packets and updates the checksum.
//!
//! # Synopsis
//! `SetIPDSCP(DSCP)`
//!
//! # Ports
//! One agnostic input, one agnostic output.
//!
//! # Arguments
//! - `DSCP` (unsigned, 0 to 63, mandatory): the Differentiated Services
//!   code point; the two ECN bits are kept.
//!
//! Expects packets with an IP network header annotation; others (or
//! headers shorter than 20 bytes) pass unchanged.
//!
//! # Handlers
//! - `value` (read/write): the code point.
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> SetIPDSCP(46) -> ...;
//! ```
//!
//! # Implementation
//! Incremental checksum update (RFC 1624) over the first header word; one
//! pass over the batch.

use super::util::{be16, nh_offset};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use linerate_wire::checksum;
use std::any::Any;

/// The `SetIPDSCP` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SetIPDSCP",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/setipdscp"),
    make,
};

struct SetIPDSCP {
    dscp: u8,
}

fn parse_dscp(v: u32) -> Result<u8, String> {
    if v > 0x3f {
        Err("diffserv code point out of range".to_string())
    } else {
        Ok(v as u8)
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let v: Option<u32> = a.read_mp("DSCP");
    a.complete().map_err(|e| e.0)?;
    let dscp = parse_dscp(v.unwrap_or(0)).map_err(|e| vec![e])?;
    Ok(Box::new(SetIPDSCP { dscp }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("value")];

impl Element for SetIPDSCP {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let tos_bits = self.dscp << 2;
        for p in batch.iter_mut() {
            let Some(nh) = nh_offset(p) else { continue };
            if p.len() - nh < 20 {
                continue;
            }
            let ip = &mut p.data_mut()[nh..];
            let old = be16(ip, 0);
            ip[1] = (ip[1] & 3) | tos_bits;
            let new = be16(ip, 0);
            let c = checksum::update_u16(be16(ip, 10), old, new);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "value").then(|| self.dscp.to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "value").then(|| {
            crate::parse_value::<u32>(value)
                .and_then(parse_dscp)
                .map(|d| self.dscp = d)
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
