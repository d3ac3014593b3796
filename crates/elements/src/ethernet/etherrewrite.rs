//! Rewrites the source and destination Ethernet addresses.
//!
//! # Synopsis
//! `EtherRewrite(SRC, DST)`
//!
//! # Ports
//! One input, one output, agnostic.
//!
//! # Arguments
//! - `SRC` (Ethernet address): the new source address.
//! - `DST` (Ethernet address): the new destination address.
//!
//! The Ethernet type is left untouched.
//!
//! # Handlers
//! - `src` (read/write): the source address, e.g. `00-01-02-03-04-05`.
//! - `dst` (read/write): the destination address.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true)
//!   -> EtherRewrite(1:1:1:1:1:1, 2:2:2:2:2:2) -> ToDump(out.pcap);
//! ```
//!
//! # Implementation
//! Writes the 12 address bytes at the start of each packet in place (a
//! shared packet is first copied into its own buffer). Packets shorter than
//! an Ethernet header (14 bytes) are dropped and counted (`drops()`), where
//! Click would write past their end.

use super::etherencap::ether_str;
use linerate_args::EtherAddr;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `EtherRewrite` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "EtherRewrite",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ethernet/etherrewrite"),
    make,
};

struct EtherRewrite {
    /// Destination then source address.
    addrs: [u8; 12],
    short: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let src: Option<EtherAddr> = a.read_mp("SRC");
    let dst: Option<EtherAddr> = a.read_mp("DST");
    a.complete().map_err(|e| e.0)?;
    let mut addrs = [0u8; 12];
    addrs[..6].copy_from_slice(&dst.unwrap_or_default().0);
    addrs[6..].copy_from_slice(&src.unwrap_or_default().0);
    Ok(Box::new(EtherRewrite { addrs, short: 0 }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("dst"),
];

impl Element for EtherRewrite {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let addrs = self.addrs;
        let short = batch.retain(|p| {
            if p.len() < 14 {
                return false;
            }
            p.data_mut()[..12].copy_from_slice(&addrs);
            true
        });
        self.short += short as u64;
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "src" => ether_str(&self.addrs[6..]),
            "dst" => ether_str(&self.addrs[..6]),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "src" => crate::parse_value::<EtherAddr>(value)
                .map(|e| self.addrs[6..].copy_from_slice(&e.0)),
            "dst" => crate::parse_value::<EtherAddr>(value)
                .map(|e| self.addrs[..6].copy_from_slice(&e.0)),
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("too short", self.short)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
