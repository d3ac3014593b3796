//! SCION border-router step 0: the underlay, the ingress link, the SCION
//! header and path type, and the path's consistency (§9.3 steps 1-2).
//!
//! # Synopsis
//! `SCIONParse(CONFIG)`
//!
//! # Ports
//! One push input of Ethernet/IPv4-or-IPv6/UDP frames as captured on the
//! router's links. Push outputs (trailing ones may be left unconnected:
//! their packets are freed, and counted all the same): 0, standard-path
//! packets to `SCIONCheckHop`; 1, one-hop paths to `SCIONOneHop`; 2, the
//! slow path (BFD, EPIC), untouched; 3, dropped (not SCION over UDP, an
//! unknown link, a malformed header, an inconsistent path, an unknown path
//! type).
//!
//! # Arguments
//! - `CONFIG` (element name, mandatory): the `SCIONConfig`.
//!
//! # Handlers
//! None; `SCIONConfig` counts (`ifN_in_packets`, `drops_*`, `slow_path`).
//!
//! # Example
//! ```click
//! br :: SCIONConfig(CONFIG topo, NOW 1700000000);
//! FromDump(in.pcap, STOP true) -> p :: SCIONParse(br) -> SCIONCheckHop(br) -> Discard;
//! p[1] -> SCIONOneHop(br) -> Discard;
//! ```
//!
//! # Implementation
//! Calls `core.rs`'s `Dataplane::arrival` (underlay parse and link
//! lookup), `classify` and `path_hop`, the functions the fused
//! `SCIONRouter` runs first, and starts the packet's annotations (ingress,
//! place of the SCION packet, the current hop; see `steps.rs`), so later
//! steps do not parse the path again. Sets the clock from the
//! system once per batch unless it is fixed.

use super::core::{classify, path_hop, Verdict};
use super::steps::{self, Outs, Ports, Shared, Step, NONE};
use linerate_runtime::time::system_now_ns;
use linerate_runtime::{Batch, ElementClass};
use linerate_wire::scion::header;

/// The `SCIONParse` element class.
pub const CLASS: ElementClass =
    steps::class::<Parse>("SCIONParse", "1/1-4", element_doc!("scion/scionparse"));

/// Output for one-hop paths.
const ONEHOP: usize = 1;

#[derive(Default)]
pub(crate) struct Parse;

impl Step for Parse {
    const PORTS: Ports = Ports {
        scmp: NONE,
        slow: 2,
        drop: 3,
    };

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        if !sh.fixed_now {
            sh.dp.now_ns = system_now_ns();
        }
        let dp = &mut sh.dp;
        for mut p in batch {
            let fr = match dp.arrival(p.data()) {
                Ok(fr) => fr,
                Err(d) => {
                    outs.end(dp, p, Verdict::Drop(d));
                    continue;
                }
            };
            dp.count_in(&fr);
            steps::start(&mut p, &fr);
            let s = fr.scion(p.data());
            let v = match classify(s) {
                Ok(true) => path_hop(&header::Packet::new_unchecked(s)),
                Ok(false) => {
                    outs.put(ONEHOP, p);
                    continue;
                }
                Err(v) => Err(v),
            };
            match v {
                Ok(x) => {
                    steps::set_hop(&mut p, &x);
                    outs.put(steps::NEXT, p);
                }
                Err(v) => outs.end(dp, p, v),
            }
        }
    }
}
