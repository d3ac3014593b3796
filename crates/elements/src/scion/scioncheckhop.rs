//! SCION border-router steps 3-8 (§9.3) for the hop a packet arrived on:
//! expiry, the ingress interface, the packet size, transit from the
//! internal network, the source and destination addresses.
//!
//! # Synopsis
//! `SCIONCheckHop(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONParse`. Push outputs: 0, packets that passed,
//! to `SCIONVerifyHop`; 1, SCMP ParameterProblem errors (expired hop,
//! unknown hop-field ingress or egress, invalid packet size, invalid source
//! or destination address) to `SCIONSCMPError`; 2, dropped (transit
//! source not a sibling router, bad annotations).
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
//! p :: SCIONParse(br) -> c :: SCIONCheckHop(br) -> SCIONVerifyHop(br) -> Discard;
//! c[1] -> SCIONSCMPError(br) -> Discard;
//! ```
//!
//! # Implementation
//! Takes the current hop from the annotations `SCIONParse` left (and the
//! underlay source for packets from the internal network), then calls
//! `core.rs`'s `Dataplane::check_hop`, the function the fused
//! `SCIONRouter` runs.

use super::core::{Dataplane, Ep};
use super::steps::{self, Outs, Ports, Shared, Step, NONE};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONCheckHop` element class.
pub const CLASS: ElementClass = steps::class::<CheckHop>(
    "SCIONCheckHop",
    "1/1-3",
    element_doc!("scion/scioncheckhop"),
);

#[derive(Default)]
pub(crate) struct CheckHop;

impl Step for CheckHop {
    const PORTS: Ports = Ports {
        scmp: 1,
        slow: NONE,
        drop: 2,
    };

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for p in batch {
            let Some((x, h, ingress)) = steps::at(&p, dp) else {
                outs.malformed(dp, p);
                continue;
            };
            // Only step 6 (a packet from the internal network) reads the
            // underlay source.
            let usrc = match ingress {
                Some(_) => Ep::default(),
                None => match Dataplane::underlay(p.data()) {
                    Ok(fr) => fr.src,
                    Err(_) => {
                        outs.malformed(dp, p);
                        continue;
                    }
                },
            };
            match dp.check_hop(h.as_ref(), &h, &x, ingress, &usrc) {
                Ok(()) => outs.put(steps::NEXT, p),
                Err(v) => outs.end(dp, p, v),
            }
        }
    }
}
