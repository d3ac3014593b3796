//! SCION border-router steps 9-10 (§9.3): the SegID update against
//! construction direction and the hop field's AES-CMAC, for a batch at a
//! time; after a crossover, the MAC of the next segment's first hop
//! (step 13).
//!
//! # Synopsis
//! `SCIONVerifyHop(CONFIG)`
//!
//! # Ports
//! One push input from `SCIONCheckHop` (or `SCIONRoute`'s crossover
//! output). Push outputs: 0, packets whose MAC matched, to `SCIONRoute`;
//! 1, SCMP ParameterProblem "invalid hop-field MAC" to `SCIONSCMPError`;
//! 2, dropped (bad annotations).
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
//! SCIONParse(br) -> SCIONCheckHop(br) -> v :: SCIONVerifyHop(br) -> SCIONRoute(br) -> Discard;
//! v[1] -> SCIONSCMPError(br) -> Discard;
//! ```
//!
//! # Implementation
//! `core.rs`'s `hop_mac` gives each packet's MAC input block, expected
//! MAC and SCMP answer (and the SegID edit, kept in the annotations); the
//! blocks get the CMAC subkey K1 XORed in and the whole batch is encrypted
//! in one call (the forwarding key's AES schedule and subkeys are
//! precomputed; VAES when the CPU has it), as in the fused `SCIONRouter`.
//! The MACs are compared in constant time.

use super::core::{hop_mac, Plan, Verdict};
use super::mac::mac_equal;
use super::steps::{self, Outs, Ports, Shared, Step, NONE};
use linerate_runtime::{Batch, ElementClass, MAX_BATCH};

/// The `SCIONVerifyHop` element class.
pub const CLASS: ElementClass = steps::class::<VerifyHop>(
    "SCIONVerifyHop",
    "1/1-3",
    element_doc!("scion/scionverifyhop"),
);

/// Per-batch MAC work: blocks, expected MACs, SCMP answers.
pub(crate) struct VerifyHop {
    blocks: Box<[[u8; 16]; MAX_BATCH]>,
    checks: Box<[([u8; 6], Verdict); MAX_BATCH]>,
    ok: [bool; MAX_BATCH],
}

impl Default for VerifyHop {
    fn default() -> VerifyHop {
        VerifyHop {
            blocks: Box::new([[0; 16]; MAX_BATCH]),
            checks: Box::new([([0; 6], Verdict::Slow); MAX_BATCH]),
            ok: [false; MAX_BATCH],
        }
    }
}

impl Step for VerifyHop {
    const PORTS: Ports = Ports {
        scmp: 1,
        slow: NONE,
        drop: 2,
    };

    fn run(&mut self, sh: &mut Shared, mut batch: Batch, outs: &mut Outs) {
        let dp = &mut sh.dp;
        let n = batch.len().min(MAX_BATCH);
        for (k, p) in batch.as_mut_slice()[..n].iter_mut().enumerate() {
            self.ok[k] = false;
            let mut plan = Plan::new(Verdict::Slow);
            if let Some((x, h, ingress)) = steps::at(p, dp) {
                hop_mac(h.as_ref(), &x, ingress, &mut plan);
                self.blocks[k] = dp.hop_mac().prepare(&plan.blocks[0]);
                self.checks[k] = plan.check(0);
                self.ok[k] = steps::add_edits(p, plan.edits());
            }
        }
        dp.hop_mac().finish_blocks(&mut self.blocks[..n]);
        for (k, p) in batch.drain().enumerate() {
            if k >= n || !self.ok[k] {
                outs.malformed(dp, p);
            } else if mac_equal(&self.blocks[k], &self.checks[k].0) {
                outs.put(steps::NEXT, p);
            } else {
                outs.end(dp, p, self.checks[k].1);
            }
        }
    }
}
