//! SCION border-router SCMP errors (§10): the reply to a packet a step
//! marked with an SCMP type, code and pointer, sent back along the
//! reversed path from this router.
//!
//! # Synopsis
//! `SCIONSCMPError(CONFIG)`
//!
//! # Ports
//! One push input from the steps' SCMP outputs (1). Push outputs: 0, the
//! replies (new frames, underlay to the link or host the packet came
//! from); 1, packets that get no reply (an SCMP error about an SCMP
//! error, a path that cannot be reversed: `drops_no_scmp`; bad
//! annotations).
//!
//! # Arguments
//! - `CONFIG` (element name, mandatory): the `SCIONConfig`.
//!
//! # Handlers
//! None; `SCIONConfig` counts (`scmp_<code>`, `scmp_unreachable`).
//!
//! # Example
//! ```click
//! br :: SCIONConfig(CONFIG topo);
//! c :: SCIONCheckHop(br); c[1] -> SCIONSCMPError(br) -> ToDump(out.pcap, ENCAP ETHER);
//! ```
//!
//! # Implementation
//! Writes the path edits recorded so far (the reference router answers
//! from the packet as processed up to the failing step), then calls
//! `core.rs`'s `Dataplane::scmp`, the fused `SCIONRouter`'s: the path
//! reversed with the wire crate's `StandardRepr`, a quote of at most 1232
//! bytes in a fresh buffer, the SCMP checksum. The packet itself is freed.

use super::steps::{self, Outs, Ports, Shared, Step};
use linerate_runtime::{Batch, ElementClass};

/// The `SCIONSCMPError` element class.
pub const CLASS: ElementClass = steps::class::<ScmpError>(
    "SCIONSCMPError",
    "1/1-2",
    element_doc!("scion/scionscmperror"),
);

#[derive(Default)]
pub(crate) struct ScmpError;

impl Step for ScmpError {
    const PORTS: Ports = steps::DROP_ONLY;

    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        for mut p in batch {
            let (t, c, ptr) = steps::scmp_error(&p);
            let Some((fr, _)) = steps::apply(&mut p, dp) else {
                outs.malformed(dp, p);
                continue;
            };
            match dp.scmp(&p, &fr, t, c, ptr) {
                (_, Some(r)) => outs.put(steps::NEXT, r),
                (_, None) => outs.drop(p),
            }
        }
    }
}
