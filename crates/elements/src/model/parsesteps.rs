//! Performs `h` simulated parse-and-lookup steps on every packet.
//!
//! # Synopsis
//! `ParseSteps(STEPS [, KEYWORDS])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `STEPS` (integer, default 0): the number of steps `h` per packet.
//! - `LANES` (keyword, 1, 2, 4, 8 or 16, default 8): packets of a batch
//!   processed in lockstep (see Implementation).
//!
//! One step, starting from a state seeded with the packet length:
//! 1. choose an offset in the packet's first 128 bytes (its headers) from the
//!    previous step's result and read the four bytes there (packets shorter
//!    than four bytes use their length);
//! 2. hash them into the state (xor, multiply by a 32-bit odd constant, xor-shift);
//! 3. branch on the hash: about one step in four takes the rare path;
//! 4. look up a 256-entry table (1 KiB) indexed by the hash and fold the
//!    entry in, on either path differently.
//!
//! Reading only the first 128 bytes keeps a step's cost independent of the
//! packet length, as a header parser's is (reading anywhere in a 1,500-byte
//! packet would add cache misses that grow with the length).
//! Each step depends on the previous one (the offset read and the table index
//! come from its result), so steps cannot be skipped, reordered or vectorised
//! by the compiler. The final state of every packet is added into `result`.
//! Packets are not modified. This is the `H` workload of `linerate model`
//! (docs/model.md).
//!
//! # Handlers
//! - `count` (read): packets processed.
//! - `result` (read): the sum (mod 2^64) of every packet's final state; it
//!   depends only on the packets and `STEPS`, so two runs on the same input
//!   agree.
//! - `steps` (read/write): `STEPS`.
//! - `reset` (write): zero `count` and `result`.
//!
//! # Example
//! ```click
//! MemoryReplay(LENGTH 64, LIMIT 1000000, STOP true)
//!     -> ParseSteps(20) -> VLANEncap(VLAN_ID 100) -> Discard;
//! ```
//!
//! # Implementation
//! No allocation, no writes to packets. With `STEPS 0` each packet's state
//! is its seed, so the element reads each packet's length and nothing else
//! (`linerate model`'s C point: 4 instructions a packet fewer than lanes
//! that run no step). A step is one dependent chain of
//! about a dozen instructions (two loads, two multiplies): one packet alone
//! runs at the chain's latency. With `LANES n`, n packets of the batch run
//! their steps in lockstep, so the core overlaps n independent chains (a
//! parser written for throughput does the same, as VPP's dual and quad
//! loops). `LANES 1` measures the latency-bound step. The rare-path branch
//! is data-dependent; the compiler may turn it into a conditional move.
//! When every packet of a chunk holds at least four bytes (always, for
//! Ethernet frames), each packet's window length is worked out once and
//! the read needs no bounds test (the offset is below the window's end by
//! construction): 18.6 instructions and 5.6 cycles a step with 8 lanes,
//! against 26.5 and 6.4 when every step recomputed both (same results,
//! `lockstep_lanes_give_each_packets_own_state`). Nothing is prefetched:
//! the windows are in cache already on both of `linerate model`'s paths
//! (the memory path's source has just copied each frame, FromDump reads
//! the file ahead of itself). Until session 14 the next chunk's windows
//! were prefetched, which made a packet's first step cost 36 instructions
//! against 18 for each later one; without it the fit of `T = C + P·p +
//! H·h` has fewer points above 3 % (2-6 of 36 in four calibrations,
//! against 5-7) and the same `C` and `H`.

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;

/// The `ParseSteps` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ParseSteps",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("model/parsesteps"),
    make,
};

/// The lookup table: 256 pseudo-random 32-bit words (splitmix32-style).
static TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    let mut x: u32 = 0x2545_F491;
    while i < 256 {
        x = x.wrapping_add(0x9E37_79B9);
        let mut z = x;
        z = (z ^ (z >> 16)).wrapping_mul(0x85EB_CA6B);
        z = (z ^ (z >> 13)).wrapping_mul(0xC2B2_AE35);
        t[i] = z ^ (z >> 16);
        i += 1;
    }
    t
};

/// Bytes of a packet the steps read: its headers.
pub const WINDOW: usize = 128;

/// One parse-and-lookup step on packet data `d` from state `s`.
#[inline(always)]
pub fn step(s: u32, d: &[u8]) -> u32 {
    let n = d.len().min(WINDOW);
    let w = if n >= 4 {
        // Offset in [0, n-4] of the window, chosen by the previous result (Lemire's
        // multiply-shift range reduction: no division).
        let off = ((u64::from(s) * (n as u64 - 3)) >> 32) as usize;
        match d.get(off..off + 4) {
            Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            None => n as u32,
        }
    } else {
        n as u32
    };
    mix(s, w)
}

/// The hash, the rare-path branch and the table lookup of a step, given
/// the word read.
#[inline(always)]
fn mix(s: u32, w: u32) -> u32 {
    let mut x = (s ^ w).wrapping_mul(0x9E37_79B1);
    x ^= x >> 15;
    let t = TABLE[(x >> 24) as usize];
    if x & 3 == 0 {
        x.rotate_left(7) ^ t
    } else {
        x.wrapping_add(t)
    }
}

/// [`step`] on a packet of at least four bytes, with its window's length
/// less three (`k = min(len, WINDOW) - 3`, at least 1) worked out once per
/// packet instead of once per step, and without the bounds test: the same
/// result, the same load at the same offset.
///
/// # Safety
/// `d` is valid for reads of `k + 3` bytes.
#[inline(always)]
unsafe fn step_long(s: u32, d: *const u8, k: u64) -> u32 {
    // off = floor(s * k / 2^32) < k because s < 2^32, so off + 4 <= k + 3.
    let off = ((u64::from(s) * k) >> 32) as usize;
    mix(
        s,
        u32::from_le(std::ptr::read_unaligned(d.add(off) as *const u32)),
    )
}

/// The final state of one packet after `steps` steps.
pub fn packet_state(d: &[u8], steps: u32) -> u32 {
    let mut s = seed(d);
    for _ in 0..steps {
        s = step(s, d);
    }
    s
}

#[inline(always)]
fn seed(d: &[u8]) -> u32 {
    seed_len(d.len())
}

#[inline(always)]
fn seed_len(len: usize) -> u32 {
    (len as u32).wrapping_mul(0x0100_0193) ^ 0x811C_9DC5
}

/// Run `steps` steps on `L` packets in lockstep; returns the sum of states.
#[inline(always)]
fn lanes<const L: usize>(pkts: &[Packet], steps: u32) -> u64 {
    let mut d: [&[u8]; L] = [&[]; L];
    let mut s = [0u32; L];
    for l in 0..L {
        d[l] = pkts[l].data();
        s[l] = seed(d[l]);
    }
    if steps > 0 && d.iter().all(|d| d.len() >= 4) {
        let mut k = [0u64; L];
        for l in 0..L {
            k[l] = d[l].len().min(WINDOW) as u64 - 3;
        }
        for _ in 0..steps {
            for l in 0..L {
                // SAFETY: d[l] holds at least min(len, WINDOW) = k[l] + 3 bytes.
                s[l] = unsafe { step_long(s[l], d[l].as_ptr(), k[l]) };
            }
        }
    } else {
        for _ in 0..steps {
            for l in 0..L {
                s[l] = step(s[l], d[l]);
            }
        }
    }
    s.iter().map(|&x| u64::from(x)).sum()
}

fn run_chunks<const L: usize>(pkts: &[Packet], steps: u32) -> u64 {
    if steps == 0 {
        // Each packet's state is its seed: one read of its length and no
        // lanes to set up (`lanes` adds about 4 instructions a packet for
        // zero steps, 2 % of `linerate model`'s C point).
        return pkts
            .iter()
            .map(|p| u64::from(seed_len(p.len())))
            .fold(0, u64::wrapping_add);
    }
    let mut sum = 0u64;
    let mut it = pkts.chunks_exact(L);
    for c in &mut it {
        sum = sum.wrapping_add(lanes::<L>(c, steps));
    }
    for p in it.remainder() {
        sum = sum.wrapping_add(u64::from(packet_state(p.data(), steps)));
    }
    sum
}

struct ParseSteps {
    steps: u32,
    lanes: usize,
    count: u64,
    result: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let steps: u32 = a.read_p_or("STEPS", 0);
    let lanes: usize = a.read_or("LANES", 8);
    a.complete().map_err(|e| e.0)?;
    if ![1, 2, 4, 8, 16].contains(&lanes) {
        return Err(vec!["LANES must be 1, 2, 4, 8 or 16".into()]);
    }
    Ok(Box::new(ParseSteps {
        steps,
        lanes,
        count: 0,
        result: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::read("result"),
    HandlerSpec::read_write("steps"),
    HandlerSpec::write("reset"),
];

impl Element for ParseSteps {
    #[inline]
    fn action(&mut self, batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        let p = batch.as_slice();
        let sum = match self.lanes {
            1 => run_chunks::<1>(p, self.steps),
            2 => run_chunks::<2>(p, self.steps),
            4 => run_chunks::<4>(p, self.steps),
            16 => run_chunks::<16>(p, self.steps),
            _ => run_chunks::<8>(p, self.steps),
        };
        self.result = self.result.wrapping_add(sum);
        self.count += p.len() as u64;
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "result" => self.result.to_string(),
            "steps" => self.steps.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "steps" => crate::parse_value::<u32>(value).map(|v| self.steps = v),
            "reset" => {
                self.count = 0;
                self.result = 0;
                Ok(())
            }
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_deterministic_and_safe_on_short_data() {
        let d: Vec<u8> = (0..64u8).collect();
        assert_eq!(packet_state(&d, 10), packet_state(&d, 10));
        assert_ne!(packet_state(&d, 10), packet_state(&d, 11));
        for n in 0..8 {
            let _ = packet_state(&d[..n], 5);
        }
        // Offsets stay in range for every state.
        for s in [0, 1, u32::MAX, 0x8000_0000] {
            let _ = step(s, &d[..4]);
            let _ = step(s, &d);
        }
    }

    #[test]
    fn lockstep_lanes_give_each_packets_own_state() {
        // Every length from 0 to 200 (short packets, the window's edge,
        // longer ones), in chunks of each lane count: the sum of the
        // packets' own states, step by step.
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 7) as u8).collect();
        let pkts: Vec<Packet> = (0..=200).map(|n| Packet::from_slice(&data[..n])).collect();
        for steps in [0, 1, 7, 40] {
            let want: u64 = pkts
                .iter()
                .map(|p| u64::from(packet_state(p.data(), steps)))
                .sum();
            for (lanes, got) in [
                (1, run_chunks::<1>(&pkts, steps)),
                (2, run_chunks::<2>(&pkts, steps)),
                (8, run_chunks::<8>(&pkts, steps)),
                (16, run_chunks::<16>(&pkts, steps)),
            ] {
                assert_eq!(got, want, "{lanes} lanes, {steps} steps");
            }
            // Chunks of long packets only take the precomputed path.
            assert_eq!(
                run_chunks::<8>(&pkts[8..], steps),
                pkts[8..]
                    .iter()
                    .map(|p| u64::from(packet_state(p.data(), steps)))
                    .sum::<u64>()
            );
        }
    }
}
