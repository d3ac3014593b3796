//! Computes, appends or verifies an HMAC-SHA256 (RFC 2104, RFC 4231) over a packet
//! region, optionally truncated (HMAC-SHA-256-128 with `MACLEN 16`).
//!
//! # Synopsis
//! `HMACSHA256(KEY [, KEYWORDS])`
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
//! - `MACLEN` (1 to 32, default 32): bytes of the MAC written or compared
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
//! // HMAC-SHA-256-128 (RFC 4868) over everything after the IP
//! // header: appended, then checked and stripped.
//! FromDump(in.pcap, STOP true)
//!     -> HMACSHA256(KEY 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b, OFFSET 34, MACLEN 16)
//!     -> v :: HMACSHA256(KEY 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b, OFFSET 34,
//!                       MACLEN 16, MODE verify, STRIP true)
//!     -> ToDump(out.pcap);
//! v[1] -> Discard;
//! ```
//!
//! # Implementation
//! The key's `ipad` and `opad` blocks are compressed once, at configure
//! time and on a key write, so a MAC costs the region's blocks plus one
//! outer block. Full blocks are compressed straight from the packet, no
//! copy.
//!
//! Packets are handled 32 at a time: regions located first, the MACs of
//! the group computed together, then written or compared. RustCrypto's
//! `sha2` and ring hash one buffer at a time, and with the SHA extensions
//! one stream leaves the unit idle: each `sha256rnds2` waits on the one
//! before it. linerate therefore hashes 4 packets in lockstep
//! (`HmacSha256::mac_sha256_batch`, as `HmacSha1::mac_sha1_lanes` does for
//! SHA-1): each packet's state and message schedule stay in its own
//! registers and the four streams' `sha256rnds2`, `sha256msg1` and
//! `sha256msg2` interleave. Messages of different lengths go through
//! their common blocks in lockstep, each then finishes its own through
//! `sha2`, and the four outer blocks go in lockstep again; the 1 to 3
//! packets left after the groups of 4 go as a pair, then alone. Without
//! the SHA extensions (or off x86-64) every packet is hashed on its own
//! through `sha2`. Nothing is allocated: states and padded tail blocks live on the
//! stack. The tests check it against RustCrypto's `hmac` (random keys,
//! lengths 0 to 3000 bytes mixed in a batch) and the RFC 4231 vectors.
//!
//! Measured on an AMD EPYC (Zen 4 guest, 2 vCPUs, shared with builds):
//! HMAC-SHA256 of 1500-byte messages (`bench/examples/crypto_libs.rs`)
//! 2.92-3.03 GB/s with 4 lanes, 2.82-2.85 with 2, 2.52 with 3 (two runs),
//! against 1.66-1.67 for `sha2` one at a time and 1.49-1.51 for ring.
//! Element (`linerate bench elements --runs 5 HMACSHA256`, 128-bit MAC
//! appended after Ethernet, pinned to one core, old and new binaries
//! alternated twice): 64 B,
//! 102.2 and 101.7 ns per packet one at a time, 71.5 and 71.6 ns in
//! lockstep (5.0 to 7.1-7.2 Gbps); 1500 B, 927 and 914 ns, now 526 and
//! 507 ns (12.9-13.1 to 22.8-23.7 Gbps); `IMPL reference` about 950 ns.
//!
//! ClickNP's optimisations: struct of arrays — each group of 32 packets'
//! regions and MAC positions are located into arrays first, the group's
//! MACs computed from them together, then written or compared in a last
//! pass; SIMD — the rounds run on SHA-NI's 128-bit registers, 4 packets in
//! lockstep; prefetch — not used: each region is read once, in order, 64
//! bytes at a time, which the hardware prefetcher follows, and there are
//! no table lookups whose latency would need hiding; slow path — the
//! blocks a message has beyond the shortest of its lockstep group, and
//! every packet on CPUs without SHA-NI, are hashed one packet at a time
//! through `sha2`; packets too short for the region or MAC, and failed
//! verifications, are marked and split off to output 1 after the batch.
//!
//! Click's closest elements are `IPsecAuthHMACSHA1` (HMAC-SHA1 over a
//! whole ESP packet, keyed from the security-association annotation, with
//! a fixed 12-byte trailing digest) and `IPsecAuthSHA1` (an unkeyed SHA-1
//! digest, also 12 bytes); Click has no SHA-256 MAC. HMACSHA256 takes its
//! key as an argument, covers any packet region and writes or checks 1 to
//! 32 MAC bytes at any offset.

use super::maccore::{self, MacAlgo};
use super::primitives::{HmacSha256, Sha256Compress};
use hmac::{KeyInit, Mac};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `HMACSHA256` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "HMACSHA256",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("crypto/hmacsha256"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    maccore::make::<HmacSha256>(ctx)
}

impl MacAlgo for HmacSha256 {
    const OUT: usize = 32;
    type Ref = hmac::Hmac<sha2::Sha256>;
    fn new(key: &[u8]) -> Result<Self, String> {
        Ok(HmacSha256::new::<Sha256Compress>(key))
    }
    fn new_ref(key: &[u8]) -> Result<Self::Ref, String> {
        hmac::Hmac::new_from_slice(key).map_err(|e| e.to_string())
    }
    fn mac_batch(&mut self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        self.mac_sha256_batch(msgs, out);
    }
    fn mac_ref(r: &Self::Ref, msg: &[u8]) -> [u8; 32] {
        let mut h = r.clone();
        h.update(msg);
        let mut out = [0u8; 32];
        out[..32].copy_from_slice(&h.finalize().into_bytes());
        out
    }
}
