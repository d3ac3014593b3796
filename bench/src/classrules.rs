//! The core traces' flows (written by `gentrace`) and the IPFilter rule
//! sets of issue 3's classifier benchmarks, shared by `classbench`
//! (in-process lookups) and `linerate-bench ip` (the pipeline on the core
//! trace).
//!
//! Rules: random `allow`/`deny`, mixing protocol (tcp, udp or any), source
//! and destination prefixes of lengths 0-32, exact destination ports and
//! port ranges written as comparisons (`dst port >= A && dst port <= B`);
//! half are derived from flows of the core benchmark trace (the 10,000
//! flows of `gentrace small`, regenerated here with the same seed), half are
//! random; a final `deny all`.

use crate::rng::Rng;

/// One flow of the trace.
pub struct Flow {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

/// Flows in the trace.
pub const FLOWS: usize = 10_000;

/// Seed of the core traces' generator ("linerate").
pub const SEED: u64 = 0x6c69_6e65_7261_7465;

/// The core traces' 10,000 flows, drawn from `rng` (`gentrace` writes its
/// traces from these).
pub fn flows(rng: &mut Rng) -> Vec<Flow> {
    (0..FLOWS)
        .map(|_| {
            let s = rng.next_u64();
            let d = rng.next_u64();
            Flow {
                src: [10, (s >> 8) as u8, (s >> 16) as u8, (s >> 24) as u8 | 1],
                dst: [192, 168, (d >> 8) as u8, (d >> 16) as u8 | 1],
                sport: 1024 + rng.below(64_000) as u16,
                dport: 1024 + rng.below(64_000) as u16,
            }
        })
        .collect()
}

/// The flows of gentrace's benchmark traces, and the flow index of each of
/// the first `n` packets.
pub fn trace(n: usize) -> (Vec<Flow>, Vec<usize>) {
    let mut rng = Rng(SEED);
    let flows = flows(&mut rng);
    let pk = (0..n).map(|_| rng.below(FLOWS as u64) as usize).collect();
    (flows, pk)
}

fn prefix(a: [u8; 4], len: u64) -> String {
    let v = u32::from_be_bytes(a);
    let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let [x, y, z, w] = (v & m).to_be_bytes();
    format!("{x}.{y}.{z}.{w}/{len}")
}

/// `n` rules plus the final `deny all`.
pub fn rules(n: usize, flows: &[Flow]) -> Vec<String> {
    let mut rng = Rng(0x636c_6173_7362_656e); // "classben"
    let mut out = Vec::with_capacity(n + 1);
    for i in 0..n {
        let action = if rng.below(2) == 0 { "allow" } else { "deny" };
        let proto = ["tcp", "udp", ""][rng.below(3) as usize];
        let (src, dst, port) = if i % 2 == 0 {
            let f = &flows[rng.below(FLOWS as u64) as usize];
            (f.src, f.dst, f.dport)
        } else {
            (
                (rng.next_u64() as u32).to_be_bytes(),
                (rng.next_u64() as u32).to_be_bytes(),
                rng.below(65536) as u16,
            )
        };
        let mut parts = Vec::new();
        if !proto.is_empty() {
            parts.push(proto.to_string());
        }
        parts.push(format!("src net {}", prefix(src, rng.below(33))));
        parts.push(format!("dst net {}", prefix(dst, rng.below(33))));
        match rng.below(3) {
            0 => parts.push(format!("dst port {port}")),
            1 => {
                let w = rng.below(4096) as u16;
                let lo = port.saturating_sub(w / 2);
                parts.push(format!(
                    "dst port >= {lo} && dst port <= {}",
                    lo.saturating_add(w)
                ));
            }
            _ => {}
        }
        out.push(format!("{action} {}", parts.join(" && ")));
    }
    out.push("deny all".into());
    out
}
