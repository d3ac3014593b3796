//! SCION border-router local delivery (§9.3 step 12, §11.5): the
//! destination host (an address, or a service's first instance from
//! `topology.json`) and its UDP port, then the underlay rewrite from the
//! internal address.
//!
//! # Synopsis
//! `SCIONDeliver(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONRoute`'s delivery output. Push outputs: 0,
//! frames to the local host; 1, SCMP errors (invalid destination address,
//! DestinationUnreachable for an unknown service) to `SCIONSCMPError`; 2,
//! dropped (no port to deliver to: `drops_undeliverable`; bad
//! annotations).
//!
//! # Arguments
//! - `CONFIG` (element name, mandatory): the `SCIONConfig`.
//!
//! # Handlers
//! None; `SCIONConfig` counts (`internal_out_packets`, ...).
//!
//! # Example
//! ```click
//! br :: SCIONConfig(CONFIG topo);
//! r :: SCIONRoute(br); r[5] -> d :: SCIONDeliver(br) -> ToDump(out.pcap, ENCAP ETHER);
//! d[1] -> SCIONSCMPError(br) -> ToDump(out.pcap, ENCAP ETHER);
//! ```
//!
//! # Implementation
//! Calls `core.rs`'s `Dataplane::deliver` and, for a host found,
//! `Dataplane::dispatch` after writing the path edits (as `SCIONEgress`).

use super::core::Verdict;
use super::steps::{self, Outs, Ports, Shared, Step, NONE};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONDeliver` element class.
pub const CLASS: ElementClass =
    steps::class::<Deliver>("SCIONDeliver", "1/1-3", element_doc!("scion/sciondeliver"));

#[derive(Default)]
pub(crate) struct Deliver;

impl Step for Deliver {
    const PORTS: Ports = Ports {
        scmp: 1,
        slow: NONE,
        drop: 2,
    };

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for p in batch {
            let Some(h) = steps::header(&p) else {
                outs.malformed(dp, p);
                continue;
            };
            let v = dp.deliver(h.as_ref(), &h);
            if !matches!(v, Verdict::Deliver(_)) {
                outs.end(dp, p, v);
                continue;
            }
            outs.dispatch(dp, p, v);
        }
    }
}
