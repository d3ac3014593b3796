//! Encapsulates packets in ICMP echo request (ping) headers.
//!
//! # Synopsis
//! `ICMPPingEncap(SRC, DST [, IDENTIFIER])`
//!
//! # Ports
//! One input, one output, agnostic.
//!
//! # Arguments
//! - `SRC` (IP address): source address.
//! - `DST` (IP address): destination address.
//! - `IDENTIFIER` (keyword, integer 0 to 65535, default 0): the ICMP
//!   identifier.
//!
//! Each packet becomes the data of an ICMP echo request (type 8, code 0)
//! in an IP packet (TOS 0, TTL 255, protocol 1). The IP ID and the ICMP
//! sequence number are the same counter, starting at 1 and skipping 0 when
//! it wraps. Both checksums are correct. The destination IP annotation is
//! set to `DST`; the network header annotation points at the IP header and
//! the transport header annotation at the ICMP header.
//!
//! # Handlers
//! - `src`, `dst` (read/write): the addresses.
//!
//! # Example
//! ```click
//! TimedSource(1s, LIMIT 3, STOP true)
//!   -> ICMPPingEncap(10.0.0.1, 10.0.0.2, IDENTIFIER 7) -> Discard;
//! ```
//!
//! # Implementation
//! Both headers are written into the headroom (`push(28)`); checksums are
//! computed with `linerate_wire`. No allocation. The identifier and
//! sequence fields are written as Click writes them on Linux, where it
//! stores them in host byte order (little-endian on x86 and ARM): the
//! output is byte-identical to Click's there. Click on other systems, and
//! its documentation, use network byte order.

use super::ipencap::{set_annos, template, write_header};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;
use std::net::Ipv4Addr;

/// The `ICMPPingEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ICMPPingEncap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/icmppingencap"),
    make,
};

struct ICMPPingEncap {
    template: [u8; 20],
    dst: Ipv4Addr,
    ident: u16,
    seq: u16,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let src: Option<Ipv4Addr> = a.read_mp("SRC");
    let dst: Option<Ipv4Addr> = a.read_mp("DST");
    let ident: u16 = a.read_or("IDENTIFIER", 0);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(ICMPPingEncap {
        template: template(0, false, 255, 1, src.unwrap_or(Ipv4Addr::UNSPECIFIED)),
        dst: dst.unwrap_or(Ipv4Addr::UNSPECIFIED),
        ident,
        seq: 1,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("dst"),
];

impl Element for ICMPPingEncap {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let dst = self.dst.octets();
        for p in batch.iter_mut() {
            p.push(28);
            let len = p.len();
            let d = p.data_mut();
            write_header(d, &self.template, len, self.seq, dst);
            let icmp = &mut d[20..];
            icmp[0] = 8;
            icmp[1] = 0;
            icmp[2..4].copy_from_slice(&[0, 0]);
            // Host byte order on Linux (see Implementation).
            icmp[4..6].copy_from_slice(&self.ident.to_le_bytes());
            icmp[6..8].copy_from_slice(&self.seq.to_le_bytes());
            linerate_wire::icmpv4::Packet::new_unchecked(icmp).fill_checksum();
            self.seq = self
                .seq
                .wrapping_add(if self.seq == 0xFFFF { 2 } else { 1 });
            set_annos(p, dst);
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "src" => Ipv4Addr::new(
                self.template[12],
                self.template[13],
                self.template[14],
                self.template[15],
            )
            .to_string(),
            "dst" => self.dst.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "src" => crate::parse_value::<Ipv4Addr>(value)
                .map(|a| self.template[12..16].copy_from_slice(&a.octets())),
            "dst" => crate::parse_value::<Ipv4Addr>(value).map(|a| self.dst = a),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
