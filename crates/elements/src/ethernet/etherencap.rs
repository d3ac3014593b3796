//! Encapsulates packets in an Ethernet header.
//!
//! # Synopsis
//! `EtherEncap(ETHERTYPE, SRC, DST)`
//!
//! # Ports
//! One input, one output, agnostic.
//!
//! # Arguments
//! - `ETHERTYPE` (integer, at most 0xFFFF, host order): the Ethernet type,
//!   e.g. `0x0800` for IP.
//! - `SRC` (Ethernet address): source address.
//! - `DST` (Ethernet address): destination address.
//!
//! # Handlers
//! - `src` (read/write): the source address, e.g. `00-01-02-03-04-05`.
//! - `dst` (read/write): the destination address.
//! - `ethertype` (read/write): the Ethernet type, as a decimal number.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 1, STOP true)
//!   -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> Discard;
//! ```
//!
//! # Implementation
//! The 14-byte header is prepared at configuration time and copied into the
//! headroom in front of each packet (`push(14)`): no allocation, one 14-byte
//! copy per packet. A packet whose data is shared (a clone or a view of a
//! source's template) is copied into its own buffer by the push, as Click's
//! `push_mac_header` does. Header annotations keep pointing at the same bytes.

use linerate_args::EtherAddr;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `EtherEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "EtherEncap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ethernet/etherencap"),
    make,
};

struct EtherEncap {
    /// The header as written: destination, source, type.
    header: [u8; 14],
}

/// Parse Click's ETHERTYPE argument: an unsigned integer at most 0xFFFF.
pub(crate) fn parse_ethertype(a: &mut linerate_args::Args) -> Option<u16> {
    let v: Option<u32> = a.read_mp("ETHERTYPE");
    match v {
        Some(t) if t > 0xFFFF => {
            a.error("ETHERTYPE: must be <= 0xFFFF");
            None
        }
        t => t.map(|t| t as u16),
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let etht = parse_ethertype(&mut a);
    let src: Option<EtherAddr> = a.read_mp("SRC");
    let dst: Option<EtherAddr> = a.read_mp("DST");
    a.complete().map_err(|e| e.0)?;
    let mut header = [0u8; 14];
    header[..6].copy_from_slice(&dst.unwrap_or_default().0);
    header[6..12].copy_from_slice(&src.unwrap_or_default().0);
    header[12..].copy_from_slice(&etht.unwrap_or(0).to_be_bytes());
    Ok(Box::new(EtherEncap { header }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("dst"),
    HandlerSpec::read_write("ethertype"),
];

/// Format six bytes as Click does (`00-01-02-03-04-05`).
pub(crate) fn ether_str(b: &[u8]) -> String {
    let mut a = [0u8; 6];
    a.copy_from_slice(&b[..6]);
    EtherAddr(a).to_string()
}

impl Element for EtherEncap {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            p.push(14);
            p.data_mut()[..14].copy_from_slice(&self.header);
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "src" => ether_str(&self.header[6..12]),
            "dst" => ether_str(&self.header[..6]),
            "ethertype" => u16::from_be_bytes([self.header[12], self.header[13]]).to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "src" => crate::parse_value::<EtherAddr>(value)
                .map(|e| self.header[6..12].copy_from_slice(&e.0)),
            "dst" => crate::parse_value::<EtherAddr>(value)
                .map(|e| self.header[..6].copy_from_slice(&e.0)),
            "ethertype" => crate::parse_value::<u16>(value)
                .map(|t| self.header[12..].copy_from_slice(&t.to_be_bytes())),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
