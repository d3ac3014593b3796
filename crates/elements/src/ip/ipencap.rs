//! Encapsulates packets in a static IP header.
//!
//! # Synopsis
//! `IPEncap(PROTO, SRC, DST [, KEYWORDS])`
//!
//! # Ports
//! One input, one output, agnostic.
//!
//! # Arguments
//! - `PROTO` (IP protocol: a number 0 to 255 or a name such as `tcp`,
//!   `udp`, `icmp`, `ipip`, `gre`).
//! - `SRC` (IP address): source address.
//! - `DST` (IP address, or `DST_ANNO`): destination address. `DST_ANNO`
//!   takes each packet's destination IP annotation.
//! - `TTL` (byte, default 250): time to live.
//! - `TOS` (byte, default 0): the whole TOS byte; excludes `DSCP`, `ECT`
//!   and `CE`.
//! - `DSCP` (0 to 63, default 0): differentiated services code point.
//! - `ECT` (boolean or `2`, default false): ECN-capable transport; true
//!   sets the ECN bits to 1 (ECT(1)), `2` sets them to 2 (ECT(0)).
//! - `CE` (boolean, default false): sets the ECN bits to 3.
//! - `DF` (boolean, default false): sets the Don't Fragment bit.
//!
//! Each packet gets a 20-byte header with total length set to its new
//! length, an IP ID counting up from 0, and a correct header checksum. The
//! destination IP annotation is set to `DST`; the network header annotation
//! points at the new header and the transport header annotation just after
//! it.
//!
//! # Handlers
//! - `src` (read/write): the source address.
//! - `dst` (read/write): the destination address, or `DST_ANNO`.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 1, STOP true)
//!   -> IPEncap(ipip, 18.26.4.24, 140.247.60.147) -> Discard;
//! ```
//!
//! # Implementation
//! The header is prepared at configuration time; per packet it is copied
//! into the headroom (`push(20)`), the length, ID (and destination) are
//! filled in, and the checksum is computed over the 20 bytes with
//! `linerate_wire`. No allocation.

use linerate_args::ArgValue;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::net::Ipv4Addr;

/// The `IPEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPEncap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/ipencap"),
    make,
};

/// IP protocol names Click knows (`NameInfo`'s IP protocol table).
const PROTO_NAMES: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("tcp", 6),
    ("udp", 17),
    ("ipv6", 41),
    ("rsvp", 46),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("icmp6", 58),
    ("icmpv6", 58),
    ("ospf", 89),
    ("pim", 103),
    ("sctp", 132),
];

/// Parse an IP protocol: a name or an integer 0 to 255.
pub(crate) fn parse_proto(s: &str) -> Result<u8, String> {
    let s = s.trim();
    if let Some((_, v)) = PROTO_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
        return Ok(*v);
    }
    match i64::parse_arg(s) {
        Ok(v) if (0..=255).contains(&v) => Ok(v as u8),
        Ok(_) => Err("bad IP protocol".to_string()),
        Err(_) => Err("expected IP protocol".to_string()),
    }
}

/// Write a 20-byte IPv4 header at the start of `d` (which must hold at
/// least 20 bytes) from a template with `len`, `id` and `dst` filled in,
/// and compute its checksum.
pub(crate) fn write_header(d: &mut [u8], template: &[u8; 20], len: usize, id: u16, dst: [u8; 4]) {
    let h = &mut d[..20];
    h.copy_from_slice(template);
    h[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[16..20].copy_from_slice(&dst);
    linerate_wire::ipv4::Packet::new_unchecked(h).fill_checksum();
}

/// A header template: version/IHL, TOS, flags, TTL, protocol, source.
pub(crate) fn template(tos: u8, df: bool, ttl: u8, proto: u8, src: Ipv4Addr) -> [u8; 20] {
    let mut t = [0u8; 20];
    t[0] = 0x45;
    t[1] = tos;
    if df {
        t[6] = 0x40;
    }
    t[8] = ttl;
    t[9] = proto;
    t[12..16].copy_from_slice(&src.octets());
    t
}

/// Finish an encapsulated packet's annotations: network header at the
/// start, transport header after 20 bytes, destination IP annotation.
pub(crate) fn set_annos(p: &mut Packet, dst: [u8; 4]) {
    p.set_network_header(0);
    p.set_transport_header(20);
    p.anno_mut().set_dst_ip(Ipv4Addr::from(dst));
}

/// `DST` for IPEncap and UDPIPEncap: an address or `DST_ANNO` (`None`).
pub(crate) fn parse_dst(s: &str) -> Result<Option<Ipv4Addr>, String> {
    let s = s.trim();
    if s == "DST_ANNO" {
        return Ok(None);
    }
    Ipv4Addr::parse_arg(s).map(Some)
}

pub(crate) fn dst_str(d: Option<Ipv4Addr>) -> String {
    d.map_or_else(|| "DST_ANNO".to_string(), |a| a.to_string())
}

struct IPEncap {
    template: [u8; 20],
    dst: Option<Ipv4Addr>,
    id: u16,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let proto: Option<linerate_args::Raw> = a.read_mp("PROTO");
    let src: Option<Ipv4Addr> = a.read_mp("SRC");
    let dst: Option<linerate_args::Raw> = a.read_mp("DST");
    let tos: Option<u32> = a.read("TOS");
    let ttl: u8 = a.read_or("TTL", 250);
    let dscp: Option<u32> = a.read("DSCP");
    let ect: Option<linerate_args::Word> = a.read("ECT");
    let ce: bool = a.read_or("CE", false);
    let df: bool = a.read_or("DF", false);
    let proto = proto.and_then(|p| match parse_proto(&p.0) {
        Ok(v) => Some(v),
        Err(e) => {
            a.error(format!("PROTO: {e}"));
            None
        }
    });
    let dst = dst.and_then(|d| match parse_dst(&d.0) {
        Ok(v) => Some(v),
        Err(e) => {
            a.error(format!("DST: {e}"));
            None
        }
    });
    let ect = match ect.as_ref().map(|w| w.0.as_str()) {
        None => 0u8,
        Some("2") => 2,
        Some(w) => match bool::parse_arg(w) {
            Ok(b) => u8::from(b),
            Err(_) => {
                a.error(format!("ECT: bad ECT value '{w}'"));
                0
            }
        },
    };
    if tos.is_some() && dscp.is_some() {
        a.error("cannot set both TOS and DSCP");
    } else if tos.is_some() && (ect != 0 || ce) {
        a.error("cannot set both TOS and ECN bits");
    }
    if tos.is_some_and(|t| t > 255) {
        a.error("TOS too large; max 255");
    }
    if dscp.is_some_and(|d| d > 63) {
        a.error("DSCP too large; max 63");
    }
    if ect != 0 && ce {
        a.error("can set at most one ECN option");
    }
    a.complete().map_err(|e| e.0)?;
    let mut tos_byte = match (tos, dscp) {
        (Some(t), _) => t as u8,
        (None, Some(d)) => (d as u8) << 2,
        _ => 0,
    };
    tos_byte |= ect;
    if ce {
        tos_byte |= 3;
    }
    Ok(Box::new(IPEncap {
        template: template(
            tos_byte,
            df,
            ttl,
            proto.unwrap_or(0),
            src.unwrap_or(Ipv4Addr::UNSPECIFIED),
        ),
        dst: dst.unwrap_or(Some(Ipv4Addr::UNSPECIFIED)),
        id: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("dst"),
];

impl Element for IPEncap {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            let dst = match self.dst {
                Some(d) => d.octets(),
                None => p.anno().dst_ip().octets(),
            };
            p.push(20);
            let len = p.len();
            write_header(p.data_mut(), &self.template, len, self.id, dst);
            self.id = self.id.wrapping_add(1);
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
            "dst" => dst_str(self.dst),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "src" => crate::parse_value::<Ipv4Addr>(value)
                .map(|a| self.template[12..16].copy_from_slice(&a.octets())),
            "dst" => parse_dst(value).map(|d| self.dst = d),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
