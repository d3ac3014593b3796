//! SCION border-router egress: writes the path edits of the steps before,
//! picks the interface's underlay (its link's addresses and ports, or a
//! sibling router's internal address) and rewrites the Ethernet/IP/UDP
//! headers with both checksums.
//!
//! # Synopsis
//! `SCIONEgress(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONAdvancePath`. Push outputs: 0, frames to
//! send, each with the underlay addresses of the link or router it goes
//! to (`SCIONLinks` sends it from the socket of its source); 1, dropped
//! (bad annotations).
//!
//! # Arguments
//! - `CONFIG` (element name, mandatory): the `SCIONConfig`.
//!
//! # Handlers
//! None; `SCIONConfig` counts (`ifN_out_packets`, `ifN_out_bytes`).
//!
//! # Example
//! ```click
//! br :: SCIONConfig(CONFIG topo);
//! SCIONAdvancePath(br) -> SCIONEgress(br) -> ToDump(out.pcap, ENCAP ETHER);
//! ```
//!
//! # Implementation
//! Re-reads the old underlay endpoints from the untouched frame, applies
//! the edits from the annotations (their ones'-complement change kept for
//! the UDP checksum) and calls `core.rs`'s `Dataplane::dispatch`, the
//! fused `SCIONRouter`'s last stage: the UDP checksum is updated
//! incrementally (RFC 1624), the IPv4 header checksum computed, the
//! headers moved when the address family changes. Sent frames carry zero
//! Ethernet addresses.

use super::core::Verdict;
use super::steps::{self, Outs, Ports, Shared, Step};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONEgress` element class.
pub const CLASS: ElementClass =
    steps::class::<Egress>("SCIONEgress", "1/1-2", element_doc!("scion/scionegress"));

#[derive(Default)]
pub(crate) struct Egress;

impl Step for Egress {
    const PORTS: Ports = steps::DROP_ONLY;

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for p in batch {
            let Some(eg) = steps::egress(&p, dp) else {
                outs.malformed(dp, p);
                continue;
            };
            outs.dispatch(dp, p, Verdict::Forward(eg));
        }
    }
}
