//! SCION border-router steps 11-13 (§9.3): an ingress router alert goes to
//! the slow path, a packet for this AS to delivery, and a crossover moves
//! to the next segment's first hop.
//!
//! # Synopsis
//! `SCIONRoute(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONVerifyHop`. Push outputs: 0, transit (and
//! crossed-over packets coming back with their second MAC checked) to
//! `SCIONCheckEgress`; 1, crossovers, to `SCIONVerifyHop` again for the
//! new hop's MAC; 2, local destinations to `SCIONDeliver`; 3, SCMP
//! ParameterProblem "path expired" for the hop after a crossover; 4, the
//! slow path (ingress router alert), untouched; 5, dropped (bad
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
//! v :: SCIONVerifyHop(br) -> r :: SCIONRoute(br) -> SCIONCheckEgress(br) -> Discard;
//! r[1] -> v;
//! r[2] -> SCIONDeliver(br) -> Discard;
//! ```
//!
//! # Implementation
//! Calls `core.rs`'s `Dataplane::route`, the fused `SCIONRouter`'s step
//! function; the crossover's PathMeta edit is kept in the annotations with
//! the new current hop, so the header stays unchanged.

use super::core::{Next, Plan, Verdict};
use super::steps::{self, Outs, Ports, Shared, Step};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONRoute` element class.
pub const CLASS: ElementClass =
    steps::class::<Route>("SCIONRoute", "1/1-6", element_doc!("scion/scionroute"));

/// Output for crossovers.
const CROSS: usize = 1;
/// Output for local delivery.
const DELIVER: usize = 2;

#[derive(Default)]
pub(crate) struct Route;

impl Step for Route {
    const PORTS: Ports = Ports {
        scmp: 3,
        slow: 4,
        drop: 5,
    };

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for mut p in batch {
            let Some((mut x, h, ingress)) = steps::at(&p, dp) else {
                outs.malformed(dp, p);
                continue;
            };
            if x.crossed() {
                outs.put(steps::NEXT, p);
                continue;
            }
            let mut plan = Plan::new(Verdict::Slow);
            let next = dp.route(h.as_ref(), &h, &mut x, ingress, &mut plan);
            if !steps::add_edits(&mut p, plan.edits()) {
                outs.malformed(dp, p);
                continue;
            }
            match next {
                Next::Transit => outs.put(steps::NEXT, p),
                Next::Cross => {
                    steps::set_hop(&mut p, &x);
                    outs.put(CROSS, p);
                }
                Next::Deliver => outs.put(DELIVER, p),
                Next::Done(v) => outs.end(dp, p, v),
            }
        }
    }
}
