//! Adds an 802.1Q VLAN tag to Ethernet packets.
//!
//! # Synopsis
//! `VLANEncap([VLAN_TCI, VLAN_PCP, KEYWORDS])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `VLAN_TCI` (integer 0-0xFFFF, or the word `ANNO`): the whole tag control
//!   information (VLAN ID and priority). With `ANNO` the TCI of each packet is
//!   read from its `VLAN_TCI` annotation.
//! - `VLAN_PCP` (integer 0-7, default 0): priority code point, ORed into the
//!   TCI's top three bits.
//! - `VLAN_ID` (keyword, integer 0-0xFFF, default 0): the VLAN ID, used when
//!   `VLAN_TCI` is not given. IDs 0 and 0xFFF are reserved in 802.1Q.
//! - `NATIVE_VLAN` (keyword, integer -1-0xFFF, default 0): packets whose VLAN
//!   ID equals `NATIVE_VLAN` are left untagged; -1 tags every packet.
//! - `ETHERTYPE` (keyword, integer, default 0x8100): the tag protocol
//!   identifier (0x88A8 for 802.1ad service tags, 0x9100 for old QinQ).
//!
//! The tag is inserted after the two Ethernet addresses: the packet grows by
//! four bytes (`dst src TPID TCI type payload`). Packets shorter than 12
//! bytes (no room for the addresses) are dropped and counted (`drops`).
//!
//! # Handlers
//! - `vlan_tci` (read/write): the TCI in decimal, or `ANNO`.
//! - `vlan_id`, `vlan_pcp`, `native_vlan`, `ethertype` (read/write).
//! - `drops` (read): packets too short to tag.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> VLANEncap(VLAN_ID 100, VLAN_PCP 3) -> ToDump(out.pcap);
//! ```
//!
//! # Implementation
//! Per packet: one 4-byte `push` into the headroom and a 12-byte move of the
//! addresses. A packet whose data is shared (a zero-copy view of a source's
//! buffer or trace mapping, or a clone) is first copied into its own buffer,
//! as in Click. With one tag for every packet, the batch is taken in chunks
//! of 64: the loop tags the packets it can in place (`try_push_mut`, no
//! call, so nothing spills) and marks the others, which take the copying
//! path after the chunk. The `VLAN_TCI` annotation is read in host byte order
//! (linerate's annotation convention; Click stores it in network order).
//! Click's element-specific `config` handler (which prints the parsed
//! VLAN_ID and VLAN_PCP) is not provided: `config` is linerate's generic
//! handler, the configuration string. Without `VLAN_TCI` or `VLAN_ID` Click's documentation asks for exactly one
//! of them, but Click (and linerate) then use VLAN ID 0, which is the default
//! native VLAN: packets pass untagged.

use linerate_args::Word;
use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `VLANEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "VLANEncap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ethernet/vlanencap"),
    make,
};

#[derive(Clone, Copy, Debug)]
struct Conf {
    /// Tag control information, host order.
    tci: u16,
    use_anno: bool,
    /// Native VLAN ID, or -1.
    native: i32,
    ethertype: u16,
}

struct VlanEncap {
    c: Conf,
    drops: u64,
}

fn bounded(v: Option<i64>, name: &str, lo: i64, hi: i64, errs: &mut Vec<String>) -> Option<i64> {
    match v {
        Some(x) if x < lo || x > hi => {
            errs.push(format!(
                "{name}: out of range, bound {}",
                if x < lo { lo } else { hi }
            ));
            None
        }
        x => x,
    }
}

fn parse(args: &[String]) -> Result<Conf, Vec<String>> {
    let mut a = linerate_args::Args::new(args);
    let tci_word: Option<Word> = a.read_p("VLAN_TCI");
    let pcp: Option<i64> = a.read_p("VLAN_PCP");
    let id: Option<i64> = a.read("VLAN_ID");
    let native: Option<i64> = a.read("NATIVE_VLAN");
    let ethertype: u16 = a.read_or("ETHERTYPE", 0x8100);
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    let pcp = bounded(pcp, "VLAN_PCP", 0, 7, &mut errs).unwrap_or(0);
    let id = bounded(id, "VLAN_ID", 0, 0xFFF, &mut errs).unwrap_or(0);
    let native = bounded(native, "NATIVE_VLAN", -1, 0xFFF, &mut errs).unwrap_or(0);
    let use_anno = tci_word.as_ref().is_some_and(|w| w.0 == "ANNO");
    let mut tci = id;
    if let Some(w) = tci_word.filter(|_| !use_anno) {
        match <i64 as linerate_args::ArgValue>::parse_arg(&w.0) {
            Ok(v) => tci = bounded(Some(v), "VLAN_TCI", 0, 0xFFFF, &mut errs).unwrap_or(0),
            Err(e) => errs.push(format!("VLAN_TCI: {e}")),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Conf {
        tci: (tci as u16) | ((pcp as u16) << 13),
        use_anno,
        native: native as i32,
        ethertype,
    })
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Ok(Box::new(VlanEncap {
        c: parse(&ctx.args)?,
        drops: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("vlan_tci"),
    HandlerSpec::read_write("vlan_id"),
    HandlerSpec::read_write("vlan_pcp"),
    HandlerSpec::read_write("native_vlan"),
    HandlerSpec::read_write("ethertype"),
    HandlerSpec::counter("drops"),
];

/// Insert a tag with protocol `tpid` and control information `tci` after the
/// Ethernet addresses of `p` (which holds at least 12 bytes).
#[inline]
pub(crate) fn insert_tag(p: &mut linerate_runtime::Packet, tpid: u16, tci: u16) {
    write_tag(p.push_mut(4), tag_bytes(tpid, tci));
}

/// The tag as one 4-byte value (one store; a loop with a fixed tag
/// computes it once).
#[inline(always)]
fn tag_bytes(tpid: u16, tci: u16) -> [u8; 4] {
    (u32::from(tpid) << 16 | u32::from(tci)).to_be_bytes()
}

/// Move the addresses 4 bytes to the front of `d`, the packet's data just
/// after a 4-byte push (at least 16 bytes), and write `tag` behind them.
#[inline(always)]
fn write_tag(d: &mut [u8], tag: [u8; 4]) {
    let d = &mut d[..16];
    let macs: [u8; 12] = d[4..16].try_into().expect("12 bytes");
    d[..12].copy_from_slice(&macs);
    d[12..16].copy_from_slice(&tag);
}

impl Element for VlanEncap {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let c = self.c;
        // Packets too short for the addresses are passed over by the tag
        // loops and dropped after them (a tagged packet is never short), so
        // the usual batch, with none, is read once.
        let mut short = false;
        if c.use_anno {
            for p in batch.iter_mut() {
                if p.len() < 12 {
                    short = true;
                    continue;
                }
                let tci = p.anno().u16(offsets::VLAN_TCI);
                if i32::from(tci & 0xFFF) != c.native {
                    insert_tag(p, c.ethertype, tci);
                }
            }
        } else if i32::from(c.tci & 0xFFF) != c.native {
            // One tag for every packet. Chunks of 64: a packet whose buffer is
            // its own with room for the tag is tagged in place, calling
            // nothing; one that must be copied first (shared, a view, no
            // headroom) is marked and tagged after the chunk.
            let tag = tag_bytes(c.ethertype, c.tci);
            for chunk in batch.as_mut_slice().chunks_mut(64) {
                let mut copy = 0u64;
                for (i, p) in chunk.iter_mut().enumerate() {
                    if p.len() < 12 {
                        short = true;
                        continue;
                    }
                    match p.try_push_mut(4) {
                        Some(d) => write_tag(d, tag),
                        None => copy |= 1 << i,
                    }
                }
                while copy != 0 {
                    let i = copy.trailing_zeros() as usize;
                    copy &= copy - 1;
                    insert_tag(&mut chunk[i], c.ethertype, c.tci);
                }
            }
        } else {
            short = batch.iter().any(|p| p.len() < 12);
        }
        if short {
            self.drops += batch.retain(|p| p.len() >= 12) as u64;
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let c = &self.c;
        Some(match name {
            "vlan_tci" if c.use_anno => "ANNO".to_string(),
            "vlan_tci" => c.tci.to_string(),
            "vlan_id" => (c.tci & 0xFFF).to_string(),
            "vlan_pcp" => (c.tci >> 13).to_string(),
            "native_vlan" => c.native.to_string(),
            "ethertype" => format!("0x{:04X}", c.ethertype),
            "drops" => self.drops.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let v = value.trim();
        let int = |lo: i64, hi: i64| -> Result<i64, String> {
            let x = crate::parse_value::<i64>(v)?;
            if (lo..=hi).contains(&x) {
                Ok(x)
            } else {
                Err(format!(
                    "out of range, bound {}",
                    if x < lo { lo } else { hi }
                ))
            }
        };
        let c = &mut self.c;
        Some(match name {
            "vlan_tci" if v == "ANNO" => {
                c.use_anno = true;
                Ok(())
            }
            "vlan_tci" => int(0, 0xFFFF).map(|x| {
                c.use_anno = false;
                c.tci = x as u16;
            }),
            "vlan_id" => int(0, 0xFFF).map(|x| {
                c.use_anno = false;
                c.tci = (c.tci & 0xF000) | x as u16;
            }),
            "vlan_pcp" => int(0, 7).map(|x| c.tci = (c.tci & 0x1FFF) | (x as u16) << 13),
            "native_vlan" => int(-1, 0xFFF).map(|x| c.native = x as i32),
            "ethertype" => int(0, 0xFFFF).map(|x| c.ethertype = x as u16),
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("too short", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
