//! Encrypts or decrypts a packet region with AES-128 or AES-256 in counter
//! mode (NIST SP 800-38A).
//!
//! # Synopsis
//! `AESCTR(KEY [, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0; optional push output 1 for
//! packets too short for the region or the IV field (dropped when output 1
//! is not connected).
//!
//! # Arguments
//! - `KEY` (hex string, mandatory): 16 bytes (AES-128) or 32 bytes
//!   (AES-256).
//! - `OFFSET` (unsigned, default 0): where the region starts.
//! - `LENGTH` (unsigned, default: to the end of the packet): the region's
//!   length; packets shorter than `OFFSET + LENGTH` go to output 1.
//! - `IV_OFFSET` (unsigned): the packet carries its initial counter block,
//!   16 bytes at this offset (outside the region). Counter block `j` of
//!   the region (`j` = 0, 1, ...) is that block plus `j`, as one 128-bit
//!   big-endian number (SP 800-38A's standard incrementing function).
//! - `NONCE` (8 bytes, hex): instead of `IV_OFFSET`, the counter blocks are
//!   built from a configured nonce and a per-packet number: counter block
//!   `j` is `NONCE (8 bytes) | PN (32 bits, big-endian) | j + 1 (32 bits,
//!   big-endian)`, as in RFC 3686 with `PN` in place of the IV. `PN` is the
//!   element's packet number (0 for the first packet, incremented per
//!   encrypted packet; the `packet_number` handler), or a 4-byte annotation
//!   given by `PN_ANNO` (e.g. `SEQUENCE_NUMBER`), so that the receiver can
//!   derive the same blocks.
//! - `PN_ANNO` (annotation name): see `NONCE`.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` runs
//!   RustCrypto's `ctr` mode on each packet on its own; `fast` is described
//!   below. Both give identical results.
//!
//! Exactly one of `IV_OFFSET` and `NONCE` is required. Encryption and
//! decryption are the same operation.
//!
//! # Handlers
//! - `count` (read): packets processed.
//! - `bytes` (read): bytes encrypted.
//! - `drops` (read): packets too short.
//! - `packet_number` (read/write): the next `PN` (`NONCE` mode).
//! - `key` (write): a new key, in hex (16 or 32 bytes).
//!
//! # Example
//! ```click
//! // Encrypt UDP payloads; the IV is the first 16 payload bytes.
//! FromDump(in.pcap)
//!     -> AESCTR(KEY 603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4,
//!               IV_OFFSET 42, OFFSET 58)
//!     -> ToDump(out.pcap);
//! ```
//!
//! # Implementation
//! Two paths, both keeping the AES units busy although one AES round has a
//! latency of several cycles:
//! - Regions of 256 bytes or more (the 1500-byte case) are encrypted on
//!   their own by `AesKey::apply_ctr32`: with VAES the counter blocks are
//!   made in 256-bit registers (a 32-bit add per two blocks), 16 blocks per
//!   pass go through the rounds together and the keystream is XORed into
//!   the packet 32 bytes at a time, with no keystream buffer. In `IV_OFFSET`
//!   mode a region whose counter would carry out of the IV's low 32 bits
//!   takes the second path.
//! - Shorter regions share a keystream buffer (768 blocks, 12 KB, owned by
//!   the element: nothing allocated per packet): one pass over the batch
//!   writes the counter blocks of many packets, one call encrypts them all
//!   (AES is pipelined across packets), and a last pass XORs each region.
//!
//! The library was chosen by measurement (`cargo run --release -p
//! linerate-bench --example crypto_libs`: one core, median thread CPU
//! time, AMD EPYC with AES-NI, VAES, SHA-NI and AVX2, no AVX-512; the
//! 2-core machine was shared, load average 11-12, so absolute numbers are
//! low):
//!
//! | operation | RustCrypto | ring | linerate |
//! |---|---:|---:|---:|
//! | AES-256 keystream, 750 blocks per call | 4.01 GB/s (`aes`) | no raw CTR | 8.89 GB/s (VAES) |
//! | AES-256-CTR per 1500 B packet / ring's AES-256-GCM | 2.73 GB/s (`ctr`) | 3.07 GB/s | - |
//! | HMAC-SHA1, 1500 B, pads precomputed | 1.14 GB/s (`sha1`) | 0.21 GB/s | 2.49 GB/s (4 lanes) |
//! | HMAC-SHA256, 1500 B | 1.06 GB/s (`sha2`) | 0.85 GB/s | 2.96 GB/s (4 lanes; later run, see HMACSHA256) |
//! | AES-128-CMAC of one block | 112 ns (`cmac`) | no CMAC | 2.1 ns (64 per call) |
//!
//! RustCrypto is as fast or faster than ring everywhere except AES-GCM,
//! pure Rust (ring builds C and assembly) and exposes the block-level calls
//! the batch forms need (`encrypt_blocks`, the SHA compression functions),
//! so the elements use it: its key schedules, its SHA compression and, in
//! `IMPL reference`, its `ctr`, `hmac` and `cmac` modes. aws-lc-rs was not
//! measured: it builds AWS-LC with CMake, several minutes on this shared
//! 2-core machine. `aes` 0.9 takes its VAES backend only when
//! `cpufeatures` 0.3 reports `vaes`, which it ties to AVX-512 register
//! state, so on AVX2-only CPUs (AMD Zen 3, this machine) it runs 8 blocks
//! per AES-NI pass; linerate's VAES loop (`crypto::primitives::vaes`, used
//! when the CPU has VAES and AVX2; tested against `aes` and the FIPS-197
//! and SP 800-38A vectors) doubles the keystream rate. Element cost,
//! AES-256 at 1500 bytes: 233 ns per packet (51.5 Gbps) against 548 ns for
//! `IMPL reference`.
//!
//! ClickNP's optimisations: struct of arrays — regions under 256 bytes
//! are first turned into one array of counter blocks for many packets (the
//! 768-block keystream buffer) plus a list of where each packet's region
//! and keystream lie; the array is encrypted in one call, then XORed into
//! the regions; longer regions are encrypted one packet at a time, in
//! place; SIMD — VAES on 256-bit registers, 16 blocks per pass, counters
//! made and keystream XORed 32 bytes at a time in registers (without VAES,
//! RustCrypto's `aes` with AES-NI, 8 blocks per pass); prefetch — not
//! used: each region is read and written once, in order, which the
//! hardware prefetcher follows, and the cipher uses no lookup tables;
//! slow path — in `IV_OFFSET` mode a long region whose counter would carry
//! out of the IV's low 32 bits takes the buffered path, which carries
//! across the whole counter block; packets too short for the IV or region
//! are marked and split off to output 1 after the batch.
//!
//! Click's closest elements are `IPsecAES` (AES-128 in a CBC-style chain
//! over an ESP payload, IV from the ESP header, key from the
//! security-association annotation, the trailing 12-byte digest left
//! alone) and `IPsecDES` (the same with DES). AESCTR runs counter mode
//! with AES-128 or AES-256 over any packet region, its key an argument
//! and its IV read from the packet or built from a nonce and a packet
//! number.

use super::primitives::{ctr_add, parse_hex, xor_keystream, AesKey};
use ctr::cipher::{KeyIvInit, StreamCipher};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;

/// The `AESCTR` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "AESCTR",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("crypto/aesctr"),
    make,
};

/// Keystream blocks generated per cipher call.
const KS_BLOCKS: usize = 768;

/// Regions at least this long are encrypted on their own, counters in
/// registers (`AesKey::apply_ctr32`); shorter ones share the buffer.
const DIRECT_MIN: usize = 256;

#[derive(Clone, Copy)]
enum Iv {
    Field(usize),
    Nonce([u8; 8], Option<usize>),
}

struct AesCtr {
    key: AesKey,
    key_bytes: Vec<u8>,
    use_ref: bool,
    offset: usize,
    length: Option<usize>,
    iv: Iv,
    pn: u32,
    has_out1: bool,
    count: u64,
    bytes: u64,
    drops: u64,
    ks: Vec<[u8; 16]>,
    pending: Vec<(usize, usize, usize, usize)>,
    bad: Vec<bool>,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Word};
    let mut a = Args::new(&ctx.args);
    let key: Option<String> = a.read_mp("KEY");
    let offset = a.read_or("OFFSET", 0usize);
    let length: Option<usize> = a.read("LENGTH");
    let iv_offset: Option<usize> = a.read("IV_OFFSET");
    let nonce: Option<String> = a.read("NONCE");
    let pn_anno: Option<Word> = a.read("PN_ANNO");
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    let key_bytes = match key.map(|k| parse_hex(&k)) {
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            errs.push(format!("KEY: {e}"));
            vec![0; 16]
        }
        None => vec![0; 16],
    };
    let key = AesKey::new(&key_bytes).map_err(|e| vec![format!("KEY: {e}")])?;
    let pn_anno = match pn_anno {
        Some(Word(w)) => match linerate_runtime::anno::anno_by_name(&w) {
            Some(i) if i.offset + 4 <= linerate_runtime::anno::USER_ANNO_SIZE => Some(i.offset),
            _ => {
                errs.push(format!("PN_ANNO: no 4-byte annotation {w}"));
                None
            }
        },
        None => None,
    };
    let iv = match (iv_offset, nonce) {
        (Some(o), None) => {
            let overlaps = o + 16 > offset && length.is_none_or(|l| o < offset + l);
            if overlaps {
                errs.push("IV_OFFSET: the IV field overlaps the region".into());
            }
            Iv::Field(o)
        }
        (None, Some(n)) => match parse_hex(&n) {
            Ok(n) if n.len() == 8 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&n);
                Iv::Nonce(b, pn_anno)
            }
            _ => {
                errs.push("NONCE: expected 8 bytes in hex".into());
                Iv::Field(0)
            }
        },
        _ => {
            errs.push("exactly one of IV_OFFSET and NONCE is required".into());
            Iv::Field(0)
        }
    };
    let use_ref = match imp.as_str() {
        "fast" => false,
        "reference" => true,
        _ => {
            errs.push("IMPL: expected fast or reference".into());
            false
        }
    };
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Box::new(AesCtr {
        key,
        key_bytes,
        use_ref,
        offset,
        length,
        iv,
        pn: 0,
        has_out1: ctx.noutputs() > 1,
        count: 0,
        bytes: 0,
        drops: 0,
        ks: vec![[0; 16]; KS_BLOCKS],
        pending: Vec::new(),
        bad: Vec::new(),
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("bytes"),
    HandlerSpec::counter("drops"),
    HandlerSpec::read_write("packet_number"),
    HandlerSpec::write("key"),
];

impl AesCtr {
    /// Bad packets by reason (dropped, or sent to output 1).
    fn bad_list(&self) -> Vec<(&'static str, u64)> {
        if self.drops > 0 {
            vec![("short packet", self.drops)]
        } else {
            Vec::new()
        }
    }

    /// The region of a packet of `len` bytes, `None` if it is too short.
    #[inline]
    fn region(&self, len: usize) -> Option<(usize, usize)> {
        if let Iv::Field(o) = self.iv {
            if o + 16 > len {
                return None;
            }
        }
        let avail = len.checked_sub(self.offset)?;
        match self.length {
            Some(l) if l > avail => None,
            Some(l) => Some((self.offset, l)),
            None => Some((self.offset, avail)),
        }
    }

    /// The initial counter block of `p` (taking a packet number in nonce
    /// mode).
    #[inline]
    fn first_block(&mut self, p: &Packet) -> [u8; 16] {
        match self.iv {
            Iv::Field(o) => {
                let mut b = [0u8; 16];
                b.copy_from_slice(&p.data()[o..o + 16]);
                b
            }
            Iv::Nonce(n, anno) => {
                let pn = match anno {
                    Some(off) => {
                        u32::from_be_bytes(p.anno().user[off..off + 4].try_into().unwrap_or([0; 4]))
                    }
                    None => {
                        self.pn = self.pn.wrapping_add(1);
                        self.pn.wrapping_sub(1)
                    }
                };
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&n);
                b[8..12].copy_from_slice(&pn.to_be_bytes());
                b[12..].copy_from_slice(&1u32.to_be_bytes());
                b
            }
        }
    }

    /// Encrypts the pending regions with the keystream in `ks`.
    fn flush(&mut self, pk: &mut [Packet], used: usize) {
        self.key.encrypt_blocks(&mut self.ks[..used]);
        for &(i, s, l, k) in &self.pending {
            xor_keystream(&mut pk[i].data_mut()[s..s + l], &self.ks[k..]);
        }
        self.pending.clear();
    }

    fn run_fast(&mut self, pk: &mut [Packet], bad: &mut [bool]) {
        let mut used = 0;
        for i in 0..pk.len() {
            let Some((s, l)) = self.region(pk[i].len()) else {
                bad[i] = true;
                continue;
            };
            let first = self.first_block(&pk[i]);
            let low = u32::from_be_bytes([first[12], first[13], first[14], first[15]]);
            // The direct path counts in the low word only: no carry out of it.
            let no_carry = u64::from(low) + l.div_ceil(16) as u64 <= 1 << 32;
            if l >= DIRECT_MIN && (matches!(self.iv, Iv::Nonce(..)) || no_carry) {
                self.key
                    .apply_ctr32(&first, &mut pk[i].data_mut()[s..s + l]);
                self.count += 1;
                self.bytes += l as u64;
            } else {
                self.batch_one(pk, i, (s, l), first, &mut used);
            }
        }
        if used > 0 {
            self.flush(pk, used);
        }
    }

    /// Queues packet `i`'s region for the shared keystream buffer.
    fn batch_one(
        &mut self,
        pk: &mut [Packet],
        i: usize,
        (s, l): (usize, usize),
        first: [u8; 16],
        used: &mut usize,
    ) {
        let nb = l.div_ceil(16);
        if *used + nb > self.ks.len() && *used > 0 {
            self.flush(pk, *used);
            *used = 0;
        }
        if nb > self.ks.len() {
            self.ks.resize(nb, [0; 16]);
        }
        let ks = &mut self.ks[*used..*used + nb];
        match self.iv {
            Iv::Field(_) => {
                for (j, b) in ks.iter_mut().enumerate() {
                    *b = ctr_add(&first, j as u64);
                }
            }
            Iv::Nonce(..) => {
                for (j, b) in ks.iter_mut().enumerate() {
                    *b = first;
                    b[12..].copy_from_slice(&(j as u32).wrapping_add(1).to_be_bytes());
                }
            }
        }
        self.pending.push((i, s, l, *used));
        *used += nb;
        self.count += 1;
        self.bytes += l as u64;
    }

    fn run_reference(&mut self, pk: &mut [Packet], bad: &mut [bool]) {
        for i in 0..pk.len() {
            let Some((s, l)) = self.region(pk[i].len()) else {
                bad[i] = true;
                continue;
            };
            let iv = self.first_block(&pk[i]);
            let region = &mut pk[i].data_mut()[s..s + l];
            let k = &self.key_bytes[..];
            // The key's length was checked when it was set.
            let r = match (self.iv, k.len()) {
                (Iv::Field(_), 16) => ctr::Ctr128BE::<aes::Aes128>::new_from_slices(k, &iv)
                    .map(|mut c| c.apply_keystream(region)),
                (Iv::Field(_), _) => ctr::Ctr128BE::<aes::Aes256>::new_from_slices(k, &iv)
                    .map(|mut c| c.apply_keystream(region)),
                (Iv::Nonce(..), 16) => ctr::Ctr32BE::<aes::Aes128>::new_from_slices(k, &iv)
                    .map(|mut c| c.apply_keystream(region)),
                (Iv::Nonce(..), _) => ctr::Ctr32BE::<aes::Aes256>::new_from_slices(k, &iv)
                    .map(|mut c| c.apply_keystream(region)),
            };
            debug_assert!(r.is_ok());
            self.count += 1;
            self.bytes += l as u64;
        }
    }
}

impl Element for AesCtr {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let mut bad = std::mem::take(&mut self.bad);
        bad.clear();
        bad.resize(batch.len(), false);
        if self.use_ref {
            self.run_reference(batch.as_mut_slice(), &mut bad);
        } else {
            self.run_fast(batch.as_mut_slice(), &mut bad);
        }
        let nbad = bad.iter().filter(|b| **b).count();
        if nbad > 0 {
            self.drops += nbad as u64;
            let out = batch.split_off_marked(&bad);
            if self.has_out1 {
                ctx.push(1, out);
            }
        }
        self.bad = bad;
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "bytes" => Some(self.bytes.to_string()),
            "drops" => Some(self.drops.to_string()),
            "packet_number" => Some(self.pn.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        match name {
            "packet_number" => Some(crate::parse_value::<u32>(value).map(|v| self.pn = v)),
            "key" => Some(parse_hex(value.trim()).and_then(|k| {
                self.key = AesKey::new(&k)?;
                self.key_bytes = k;
                Ok(())
            })),
            _ => None,
        }
    }

    drops_or_output_1!(self, self.has_out1, self.bad_list());

    fn as_any(&self) -> &dyn Any {
        self
    }
}
