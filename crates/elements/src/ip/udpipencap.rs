//! Encapsulates packets in UDP/IP headers.
//!
//! # Synopsis
//! `UDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM])`
//!
//! # Ports
//! One input, one output, agnostic.
//!
//! # Arguments
//! - `SRC` (IP address): source address.
//! - `SPORT` (UDP port: a number, or a name such as `domain`): source port.
//! - `DST` (IP address, or `DST_ANNO`): destination address; `DST_ANNO`
//!   takes each packet's destination IP annotation.
//! - `DPORT` (UDP port): destination port.
//! - `CHECKSUM` (boolean, default true): compute the UDP checksum;
//!   otherwise it is left 0.
//!
//! Each packet gets a 20-byte IP header (TOS 0, TTL 250, IP ID counting up
//! from 0, correct header checksum) and an 8-byte UDP header. The
//! destination IP annotation is set to `DST`; the network header annotation
//! points at the IP header and the transport header annotation at the UDP
//! header.
//!
//! # Handlers
//! - `src`, `dst` (read/write): the addresses (`dst` may read `DST_ANNO`).
//! - `sport`, `dport` (read/write): the ports.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 1, STOP true)
//!   -> UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 1234) -> Discard;
//! ```
//!
//! # Implementation
//! Both headers are written into the headroom (`push(28)`); the checksums
//! are computed with `linerate_wire::checksum`. No allocation. As Click
//! does, a UDP checksum that computes to 0 is written as 0 (RFC 768 would
//! send 0xFFFF), so output is byte-identical to Click's.

use super::ipencap::{dst_str, parse_dst, set_annos, template, write_header};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use linerate_wire::{checksum, IpProtocol};
use std::any::Any;
use std::net::Ipv4Addr;

/// The `UDPIPEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "UDPIPEncap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/udpipencap"),
    make,
};

/// Well-known UDP port names (a subset of Click's `NameInfo` services).
const PORT_NAMES: &[(&str, u16)] = &[
    ("echo", 7),
    ("discard", 9),
    ("daytime", 13),
    ("domain", 53),
    ("dns", 53),
    ("bootps", 67),
    ("bootpc", 68),
    ("tftp", 69),
    ("www", 80),
    ("http", 80),
    ("ntp", 123),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("https", 443),
    ("syslog", 514),
    ("rip", 520),
];

fn parse_port(s: &str) -> Result<u16, String> {
    let s = s.trim();
    if let Some((_, v)) = PORT_NAMES.iter().find(|(n, _)| *n == s) {
        return Ok(*v);
    }
    crate::parse_value::<u16>(s).map_err(|_| "expected port number".to_string())
}

struct UDPIPEncap {
    template: [u8; 20],
    src: Ipv4Addr,
    dst: Option<Ipv4Addr>,
    sport: u16,
    dport: u16,
    cksum: bool,
    id: u16,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let src: Option<Ipv4Addr> = a.read_mp("SRC");
    let sport: Option<linerate_args::Raw> = a.read_mp("SPORT");
    let dst: Option<linerate_args::Raw> = a.read_mp("DST");
    let dport: Option<linerate_args::Raw> = a.read_mp("DPORT");
    let cksum: bool = a.read_p_or("CHECKSUM", true);
    let mut port = |kw: &str, v: Option<linerate_args::Raw>| {
        v.and_then(|p| match parse_port(&p.0) {
            Ok(x) => Some(x),
            Err(e) => {
                a.error(format!("{kw}: {e}"));
                None
            }
        })
    };
    let sport = port("SPORT", sport);
    let dport = port("DPORT", dport);
    let dst = dst.and_then(|d| match parse_dst(&d.0) {
        Ok(v) => Some(v),
        Err(_) => {
            a.error("bad DST");
            None
        }
    });
    a.complete().map_err(|e| e.0)?;
    let src = src.unwrap_or(Ipv4Addr::UNSPECIFIED);
    Ok(Box::new(UDPIPEncap {
        template: template(0, false, 250, 17, src),
        src,
        dst: dst.unwrap_or(Some(Ipv4Addr::UNSPECIFIED)),
        sport: sport.unwrap_or(0),
        dport: dport.unwrap_or(0),
        cksum,
        id: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("sport"),
    HandlerSpec::read_write("dst"),
    HandlerSpec::read_write("dport"),
];

impl Element for UDPIPEncap {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            let dst = match self.dst {
                Some(d) => d.octets(),
                None => p.anno().dst_ip().octets(),
            };
            p.push(28);
            let len = p.len();
            let d = p.data_mut();
            write_header(d, &self.template, len, self.id, dst);
            self.id = self.id.wrapping_add(1);
            let ulen = (len - 20) as u16;
            let u = &mut d[20..];
            u[0..2].copy_from_slice(&self.sport.to_be_bytes());
            u[2..4].copy_from_slice(&self.dport.to_be_bytes());
            u[4..6].copy_from_slice(&ulen.to_be_bytes());
            u[6..8].copy_from_slice(&[0, 0]);
            if self.cksum {
                let sum = checksum::combine(&[
                    checksum::pseudo_header_v4(
                        self.src,
                        Ipv4Addr::from(dst),
                        IpProtocol::UDP,
                        ulen,
                    ),
                    checksum::sum(&u[..usize::from(ulen).min(u.len())]),
                ]);
                u[6..8].copy_from_slice(&(!sum).to_be_bytes());
            }
            set_annos(p, dst);
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "src" => self.src.to_string(),
            "sport" => self.sport.to_string(),
            "dst" => dst_str(self.dst),
            "dport" => self.dport.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "src" => crate::parse_value::<Ipv4Addr>(value).map(|a| {
                self.src = a;
                self.template[12..16].copy_from_slice(&a.octets());
            }),
            "sport" => parse_port(value).map(|p| self.sport = p),
            "dst" => parse_dst(value).map(|d| self.dst = d),
            "dport" => parse_port(value).map(|p| self.dport = p),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
