//! SCION border-router one-hop paths (§11.2): outbound from a local host
//! (FirstHop's MAC checked, SegID chained) or inbound from a neighbour
//! (SecondHop filled in with our MAC and delivered), then the underlay
//! rewrite.
//!
//! # Synopsis
//! `SCIONOneHop(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONParse`'s one-hop output. Push outputs: 0,
//! frames to send; 1, dropped (`drops_one_hop`, `drops_malformed`; bad
//! annotations).
//!
//! # Arguments
//! - `CONFIG` (element name, mandatory): the `SCIONConfig`.
//!
//! # Handlers
//! None; `SCIONConfig` counts.
//!
//! # Example
//! ```click
//! br :: SCIONConfig(CONFIG topo);
//! p :: SCIONParse(br); p[1] -> SCIONOneHop(br) -> ToDump(out.pcap, ENCAP ETHER);
//! ```
//!
//! # Implementation
//! Calls `core.rs`'s `Dataplane::onehop_check` and `Dataplane::dispatch`,
//! as the fused `SCIONRouter` does (one MAC per packet, computed on the
//! spot: one-hop paths carry beacons and are rare).

use super::core::Verdict;
use super::steps::{self, Outs, Ports, Shared, Step};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONOneHop` element class.
pub const CLASS: ElementClass =
    steps::class::<OneHop>("SCIONOneHop", "1/1-2", element_doc!("scion/sciononehop"));

#[derive(Default)]
pub(crate) struct OneHop;

impl Step for OneHop {
    const PORTS: Ports = steps::DROP_ONLY;

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for p in batch {
            let (Some(h), Some(ingress)) = (steps::header(&p), steps::ingress(&p, dp)) else {
                outs.malformed(dp, p);
                continue;
            };
            let v = dp.onehop_check(&h, ingress);
            if !matches!(v, Verdict::Forward(_) | Verdict::Deliver(_)) {
                outs.end(dp, p, v);
                continue;
            }
            outs.dispatch(dp, p, v);
        }
    }
}
