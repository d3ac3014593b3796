//! SCION border-router steps 14-16 (§9.3): the egress interface, the
//! link-type pair, an egress router alert.
//!
//! # Synopsis
//! `SCIONCheckEgress(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONRoute`. Push outputs: 0, packets with their
//! egress interface (in the annotations) to `SCIONAdvancePath`; 1, SCMP
//! ParameterProblem (unknown hop-field egress or ingress, invalid path,
//! invalid segment change) to `SCIONSCMPError`; 2, the slow path (egress
//! router alert), untouched; 3, dropped (bad annotations).
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
//! SCIONRoute(br) -> e :: SCIONCheckEgress(br) -> SCIONAdvancePath(br) -> Discard;
//! e[1] -> SCIONSCMPError(br) -> Discard;
//! ```
//!
//! # Implementation
//! Calls `core.rs`'s `Dataplane::check_egress`, the fused `SCIONRouter`'s
//! step function, on the current hop from the annotations.

use super::steps::{self, Outs, Ports, Shared, Step};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONCheckEgress` element class.
pub const CLASS: ElementClass = steps::class::<CheckEgress>(
    "SCIONCheckEgress",
    "1/1-4",
    element_doc!("scion/scioncheckegress"),
);

#[derive(Default)]
pub(crate) struct CheckEgress;

impl Step for CheckEgress {
    const PORTS: Ports = Ports {
        scmp: 1,
        slow: 2,
        drop: 3,
    };

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for mut p in batch {
            let Some((x, h, ingress)) = steps::at(&p, dp) else {
                outs.malformed(dp, p);
                continue;
            };
            match dp.check_egress(h.as_ref(), &x, ingress) {
                Ok(eg) => {
                    steps::set_egress(&mut p, eg);
                    outs.put(steps::NEXT, p);
                }
                Err(v) => outs.end(dp, p, v),
            }
        }
    }
}
