//! Computes, appends or verifies an HMAC-SHA1 (RFC 2104) over a packet
//! region, optionally truncated (HMAC-SHA1-96 with `MACLEN 12`).
//!
//! # Synopsis
//! `HMACSHA1(KEY [, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0; optional push output 1 for
//! packets too short for the region or the MAC and, in verify mode, for
//! packets whose MAC does not match (dropped when output 1 is not
//! connected).
//!
//! # Arguments
//! - `KEY` (hex string, mandatory): the HMAC key, any length (keys longer
//!   than 64 bytes are hashed first, as RFC 2104 says).
//! - `OFFSET` (unsigned, default 0): where the MACed region starts.
//! - `LENGTH` (unsigned, default: to the end of the packet, or up to a
//!   trailing MAC in verify mode): the region's length.
//! - `MODE` (`compute` or `verify`, default `compute`): `compute` writes
//!   the MAC at `MAC_OFFSET`, or appends it to the packet when `MAC_OFFSET`
//!   is not given; `verify` compares it with the bytes at `MAC_OFFSET`, or
//!   with the packet's last `MACLEN` bytes.
//! - `MACLEN` (1 to 20, default 20): bytes of the MAC written or compared
//!   (its leading bytes, RFC 2104 section 5).
//! - `MAC_OFFSET` (unsigned): where the MAC lies in the packet.
//! - `STRIP` (boolean, default false): in verify mode with a trailing MAC,
//!   remove the MAC from packets that pass.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` computes
//!   each packet's MAC on its own with RustCrypto's `hmac` crate (the key
//!   schedule cloned per packet); `fast` is described below. Both give
//!   identical results.
//!
//! # Handlers
//! - `count` (read): packets MACed.
//! - `failures` (read): packets whose MAC did not verify.
//! - `drops` (read): packets too short for the region or the MAC.
//! - `key` (write): a new key, in hex.
//!
//! # Example
//! ```click
//! // HMAC-SHA1-96 over everything after the IP
//! // header: appended, then checked and stripped.
//! FromDump(in.pcap, STOP true)
//!     -> HMACSHA1(KEY 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b, OFFSET 34, MACLEN 12)
//!     -> v :: HMACSHA1(KEY 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b, OFFSET 34,
//!                     MACLEN 12, MODE verify, STRIP true)
//!     -> ToDump(out.pcap);
//! v[1] -> Discard;
//! ```
//!
//! # Implementation
//! The key's `ipad` and `opad` blocks are compressed once, at configure
//! time and on a key write, so a MAC costs the region's blocks plus one
//! outer block. Full blocks are compressed straight from the packet, no
//! copy. The compression function is RustCrypto's `sha1`, which uses the
//! SHA-NI extensions when the CPU has them.
//!
//! Packets are handled 32 at a time: regions located first, the MACs of
//! the group computed together, then written or compared. No Rust library
//! measured (RustCrypto, ring) hashes several buffers at once, and the SHA
//! extensions work on one stream: `sha1rnds4` has a latency of several
//! cycles, so one stream leaves the unit idle. linerate therefore hashes
//! several packets at once (`HmacSha1::mac_sha1_batch`, checked against
//! RustCrypto; messages of different lengths share their common blocks):
//! on a CPU with AVX-512F and BW, 16 packets in the 16 lanes of AVX-512
//! registers (one 32-bit word of each packet a lane, the rounds' three-input
//! functions as `vpternlogd`, rotations as `vprold`), the rest and CPUs
//! without AVX-512 through the SHA extensions with 4 packets in lockstep
//! (`HmacSha1::mac_sha1_lanes`). 1500-byte messages: on an AMD EPYC 2.49
//! GB/s per core with 4 SHA-NI lanes against 1.14 one packet at a time;
//! on an Intel Xeon (Sapphire Rapids generation, session 11), where SHA-NI
//! gives 1.7-2.0 GB/s however many lanes, 4.1 GB/s with the AVX-512 lanes
//! (`bench/examples/crypto_libs.rs`). The reservation station of ClickNP's
//! SHA-1 unit becomes this interleaving of independent packets' rounds.
//!
//! Element cost at 1500 bytes (benchmark table, batches of 64): 391 ns per
//! packet, 30.7 Gbps, on the Xeon (887 ns, 13.5 Gbps, with SHA-NI there;
//! 457 ns, 26.3 Gbps, on the EPYC with SHA-NI), against 941 ns for `IMPL
//! reference`. Appending the MAC copies the benchmark source's zero-copy
//! view first.
//!
//! ClickNP's optimisations: struct of arrays — each group of 32 packets'
//! regions and MAC positions are located into arrays first, the group's
//! MACs computed from them together, then written or compared in a last
//! pass; SIMD — 16 packets in the lanes of AVX-512 registers where the CPU
//! has AVX-512F and BW, otherwise SHA-NI with 4 packets in lockstep;
//! prefetch — not used: each region is read once, in order, 64 bytes at a
//! time (the AVX-512 form gathers word `t` of 16 blocks, which lie in
//! cache lines already being read), so the hardware prefetcher covers it
//! and there are no table lookups whose latency would need hiding;
//! slow path — the blocks a message has beyond the shortest of its lockstep
//! group, and every packet on CPUs without SHA-NI, are hashed one packet
//! at a time through `sha1`; packets too short for the region or MAC, and
//! failed verifications, are marked and split off to output 1 after the
//! batch.
//!
//! Click's closest elements are `IPsecAuthHMACSHA1` (HMAC-SHA1 over a
//! whole ESP packet, keyed from the security-association annotation, with
//! the digest always truncated to 12 bytes and appended, or checked and
//! removed, at the packet's end) and `IPsecAuthSHA1` (an unkeyed SHA-1
//! digest, also 12 bytes). HMACSHA1 takes its key as an argument, covers
//! any packet region and writes or checks 1 to 20 MAC bytes at any offset.

use super::maccore::{self, MacAlgo};
use super::primitives::{HmacSha1, Sha1Compress};
use hmac::{KeyInit, Mac};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `HMACSHA1` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "HMACSHA1",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("crypto/hmacsha1"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    maccore::make::<HmacSha1>(ctx)
}

impl MacAlgo for HmacSha1 {
    const OUT: usize = 20;
    type Ref = hmac::Hmac<sha1::Sha1>;
    fn new(key: &[u8]) -> Result<Self, String> {
        Ok(HmacSha1::new::<Sha1Compress>(key))
    }
    fn new_ref(key: &[u8]) -> Result<Self::Ref, String> {
        hmac::Hmac::new_from_slice(key).map_err(|e| e.to_string())
    }
    fn mac_batch(&mut self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        self.mac_sha1_batch(msgs, out);
    }
    fn mac_ref(r: &Self::Ref, msg: &[u8]) -> [u8; 32] {
        let mut h = r.clone();
        h.update(msg);
        let mut out = [0u8; 32];
        out[..20].copy_from_slice(&h.finalize().into_bytes());
        out
    }
}
