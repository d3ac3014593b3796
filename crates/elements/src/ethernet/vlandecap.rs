//! Removes an 802.1Q VLAN tag from Ethernet packets.
//!
//! # Synopsis
//! `VLANDecap([ANNO, KEYWORDS])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `ANNO` (boolean, default true): set each packet's `VLAN_TCI` annotation
//!   to the removed tag's TCI, or to 0 if the packet had no tag.
//! - `ETHERTYPE` (keyword, integer, default 0x8100): the tag protocol
//!   identifier that marks a tagged packet.
//!
//! A packet whose EtherType field (bytes 12-13) equals `ETHERTYPE` loses the
//! four tag bytes after its Ethernet addresses; other packets pass
//! unchanged. Packets shorter than 14 bytes pass unchanged (TCI 0); a tagged
//! packet shorter than 16 bytes cannot hold a whole tag and is dropped and
//! counted (`drops`).
//!
//! # Handlers
//! - `drops` (read): truncated tagged packets dropped.
//!
//! # Example
//! ```click
//! FromDump(tagged.pcap, STOP true) -> VLANDecap -> Print(untagged) -> Discard;
//! ```
//!
//! # Implementation
//! Per packet: a 12-byte move of the addresses and a 4-byte `pull`; a packet
//! whose data is shared is copied into its own buffer first, as in Click's
//! `uniqueify`. The annotation is written in host byte order (linerate's
//! annotation convention; Click stores it in network order).

use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;

/// The `VLANDecap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "VLANDecap",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ethernet/vlandecap"),
    make,
};

struct VlanDecap {
    anno: bool,
    ethertype: u16,
    drops: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let anno = a.read_p_or("ANNO", true);
    let ethertype: u16 = a.read_or("ETHERTYPE", 0x8100);
    a.complete().map_err(|e| e.0)?;
    Ok(Box::new(VlanDecap {
        anno,
        ethertype,
        drops: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::counter("drops")];

impl Element for VlanDecap {
    #[inline]
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let (tpid, anno) = (self.ethertype.to_be_bytes(), self.anno);
        let truncated = |p: &mut linerate_runtime::Packet| {
            let d = p.data();
            (14..16).contains(&d.len()) && d[12..14] == tpid
        };
        if batch.iter_mut().any(truncated) {
            self.drops += batch.retain(|p| !truncated(p)) as u64;
        }
        for p in batch.iter_mut() {
            let d = p.data();
            let mut tci = 0u16;
            if d.len() >= 16 && d[12..14] == tpid {
                tci = u16::from_be_bytes([d[14], d[15]]);
                p.data_mut().copy_within(0..12, 4);
                p.pull(4);
            }
            if anno {
                p.anno_mut().set_u16(offsets::VLAN_TCI, tci);
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "drops").then(|| self.drops.to_string())
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("truncated tag", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
