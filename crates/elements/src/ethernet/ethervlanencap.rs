//! Encapsulates packets in an 802.1Q VLAN Ethernet header.
//!
//! # Synopsis
//! `EtherVLANEncap(ETHERTYPE, SRC, DST [, VLAN_TCI, VLAN_PCP, KEYWORDS])`
//!
//! # Ports
//! One input, one output, agnostic.
//!
//! # Arguments
//! - `ETHERTYPE` (integer, host order): the encapsulated Ethernet type.
//! - `SRC`, `DST` (Ethernet addresses).
//! - `VLAN_TCI` (integer 0 to 0xFFFF, or `ANNO`): the whole tag control
//!   information. `ANNO` takes it from each packet's `VLAN_TCI` annotation.
//! - `VLAN_PCP` (integer 0 to 7, default 0): priority code point, or-ed into
//!   the TCI's top three bits.
//! - `VLAN_ID` (keyword, integer 0 to 0xFFF, default 0): the VLAN ID, used
//!   when `VLAN_TCI` is not given.
//! - `NATIVE_VLAN` (keyword, integer -1 to 0xFFF, default 0): packets whose
//!   VLAN ID equals `NATIVE_VLAN` get a plain Ethernet header instead of an
//!   802.1Q header; -1 means never. As in Click, VLAN ID 0 is sent untagged
//!   by default.
//!
//! # Handlers
//! - `src`, `dst` (read/write): the addresses.
//! - `ethertype` (read/write): the encapsulated type, decimal.
//! - `vlan_tci` (read/write): the TCI argument (decimal) or `ANNO`.
//! - `vlan_id`, `vlan_pcp`, `native_vlan` (read/write): those arguments.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 1, STOP true)
//!   -> EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 5, VLAN_PCP 3)
//!   -> Discard;
//! ```
//!
//! # Implementation
//! The 18-byte tagged header (and the 14-byte untagged form) is prepared at
//! configuration time and copied into each packet's headroom; in `ANNO`
//! mode only the two TCI bytes are written per packet. No allocation.
//! The `VLAN_TCI` annotation is read in host byte order (linerate's
//! annotation layout); Click keeps it in network order.

use super::etherencap::{ether_str, parse_ethertype};
use linerate_args::EtherAddr;
use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `EtherVLANEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "EtherVLANEncap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ethernet/ethervlanencap"),
    make,
};

struct EtherVLANEncap {
    dst: [u8; 6],
    src: [u8; 6],
    ethertype: u16,
    /// `VLAN_TCI`: `None` for ANNO mode.
    tci_arg: Option<Option<u16>>,
    id: u16,
    pcp: u16,
    native: i32,
    /// Prepared tagged header (TCI from the arguments).
    header: [u8; 18],
}

impl EtherVLANEncap {
    fn use_anno(&self) -> bool {
        self.tci_arg == Some(None)
    }

    fn tci(&self) -> u16 {
        let base = match self.tci_arg {
            Some(Some(t)) => t,
            _ => self.id,
        };
        base | (self.pcp << 13)
    }

    fn rebuild(&mut self) {
        let mut h = [0u8; 18];
        h[..6].copy_from_slice(&self.dst);
        h[6..12].copy_from_slice(&self.src);
        h[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        h[14..16].copy_from_slice(&self.tci().to_be_bytes());
        h[16..18].copy_from_slice(&self.ethertype.to_be_bytes());
        self.header = h;
    }
}

/// Parse a `VLAN_TCI` value: `ANNO` or an integer up to 0xFFFF.
fn parse_tci(s: &str) -> Result<Option<u16>, String> {
    let s = s.trim();
    if s == "ANNO" {
        return Ok(None);
    }
    crate::parse_value::<u16>(s).map(Some)
}

fn bounded(a: &mut linerate_args::Args, kw: &str, v: Option<i64>, lo: i64, hi: i64) -> i64 {
    match v {
        Some(x) if x < lo || x > hi => {
            a.error(format!(
                "{kw}: out of range, bound {}",
                if x < lo { lo } else { hi }
            ));
            0
        }
        Some(x) => x,
        None => 0,
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let etht = parse_ethertype(&mut a);
    let src: Option<EtherAddr> = a.read_mp("SRC");
    let dst: Option<EtherAddr> = a.read_mp("DST");
    let tci_word: Option<linerate_args::Word> = a.read_p("VLAN_TCI");
    let pcp: Option<i64> = a.read_p("VLAN_PCP");
    let id: Option<i64> = a.read("VLAN_ID");
    let native: Option<i64> = a.read("NATIVE_VLAN");
    let pcp = bounded(&mut a, "VLAN_PCP", pcp, 0, 7);
    let id = bounded(&mut a, "VLAN_ID", id, 0, 0xFFF);
    let native = bounded(&mut a, "NATIVE_VLAN", native, -1, 0xFFF);
    let tci_arg = match tci_word {
        Some(w) => match parse_tci(&w.0) {
            Ok(t) => Some(t),
            Err(e) => {
                a.error(format!("VLAN_TCI: {e}"));
                None
            }
        },
        None => None,
    };
    a.complete().map_err(|e| e.0)?;
    let mut e = EtherVLANEncap {
        dst: dst.unwrap_or_default().0,
        src: src.unwrap_or_default().0,
        ethertype: etht.unwrap_or(0),
        tci_arg,
        id: id as u16,
        pcp: pcp as u16,
        native: native as i32,
        header: [0; 18],
    };
    e.rebuild();
    Ok(Box::new(e))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("dst"),
    HandlerSpec::read_write("ethertype"),
    HandlerSpec::read_write("vlan_tci"),
    HandlerSpec::read_write("vlan_id"),
    HandlerSpec::read_write("vlan_pcp"),
    HandlerSpec::read_write("native_vlan"),
];

impl Element for EtherVLANEncap {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let anno = self.use_anno();
        let native = self.native;
        for p in batch.iter_mut() {
            let tci = if anno {
                p.anno().u16(offsets::VLAN_TCI)
            } else {
                u16::from_be_bytes([self.header[14], self.header[15]])
            };
            if i32::from(tci & 0x0FFF) == native {
                p.push(14);
                let d = p.data_mut();
                d[..12].copy_from_slice(&self.header[..12]);
                d[12..14].copy_from_slice(&self.header[16..18]);
            } else {
                p.push(18);
                let d = p.data_mut();
                d[..18].copy_from_slice(&self.header);
                d[14..16].copy_from_slice(&tci.to_be_bytes());
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "src" => ether_str(&self.src),
            "dst" => ether_str(&self.dst),
            "ethertype" => self.ethertype.to_string(),
            "vlan_tci" => match self.tci_arg {
                Some(None) => "ANNO".to_string(),
                _ => self.tci().to_string(),
            },
            "vlan_id" => self.id.to_string(),
            "vlan_pcp" => self.pcp.to_string(),
            "native_vlan" => self.native.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let r = match name {
            "src" => crate::parse_value::<EtherAddr>(value).map(|e| self.src = e.0),
            "dst" => crate::parse_value::<EtherAddr>(value).map(|e| self.dst = e.0),
            "ethertype" => crate::parse_value::<u16>(value).map(|t| self.ethertype = t),
            "vlan_tci" => parse_tci(value).map(|t| self.tci_arg = Some(t)),
            "vlan_id" => crate::parse_value::<u16>(value).and_then(|v| {
                if v > 0xFFF {
                    return Err("VLAN_ID out of range, bound 4095".to_string());
                }
                self.id = v;
                Ok(())
            }),
            "vlan_pcp" => crate::parse_value::<u16>(value).and_then(|v| {
                if v > 7 {
                    return Err("VLAN_PCP out of range, bound 7".to_string());
                }
                self.pcp = v;
                Ok(())
            }),
            "native_vlan" => crate::parse_value::<i32>(value).and_then(|v| {
                if !(-1..=0xFFF).contains(&v) {
                    return Err("NATIVE_VLAN out of range".to_string());
                }
                self.native = v;
                Ok(())
            }),
            _ => return None,
        };
        self.rebuild();
        Some(r)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
