//! SCION border-router step 18 (§9.3): the SegID update in construction
//! direction and the advance to the next hop field, for packets leaving on
//! one of our links (a sibling router advances the path itself).
//!
//! # Synopsis
//! `SCIONAdvancePath(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONCheckEgress`. Push outputs: 0, packets to
//! send, to `SCIONEgress`; 1, dropped (the last hop field with a remote
//! destination: `drops_undeliverable`; bad annotations).
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
//! SCIONCheckEgress(br) -> a :: SCIONAdvancePath(br) -> SCIONEgress(br) -> Discard;
//! ```
//!
//! # Implementation
//! Calls `core.rs`'s `Dataplane::advance`, the fused `SCIONRouter`'s step
//! function; its SegID and PathMeta edits join the annotations (written by
//! `SCIONEgress`). Crossovers and peering are decided before, in
//! `SCIONRoute` and `SCIONParse`, and carried by the annotated hop.

use super::core::{Plan, Verdict};
use super::steps::{self, Outs, Ports, Shared, Step};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONAdvancePath` element class.
pub const CLASS: ElementClass = steps::class::<AdvancePath>(
    "SCIONAdvancePath",
    "1/1-2",
    element_doc!("scion/scionadvancepath"),
);

#[derive(Default)]
pub(crate) struct AdvancePath;

impl Step for AdvancePath {
    const PORTS: Ports = steps::DROP_ONLY;

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for mut p in batch {
            let (Some((x, h, _)), Some(eg)) = (steps::at(&p, dp), steps::egress(&p, dp)) else {
                outs.malformed(dp, p);
                continue;
            };
            let mut plan = Plan::new(Verdict::Slow);
            let v = dp.advance(h.as_ref(), &x, eg, &mut plan);
            if !steps::add_edits(&mut p, plan.edits()) {
                outs.malformed(dp, p);
                continue;
            }
            outs.end(dp, p, v);
        }
    }
}
