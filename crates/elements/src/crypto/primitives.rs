//! Reusable batch crypto primitives behind the crypto elements, public so
//! that other elements (the SCION router's hop-field MAC) can call them.
//!
//! All of them use RustCrypto's `aes`, `sha1` and `sha2` crates, which pick
//! AES-NI/VAES and the SHA extensions at run time (`cpufeatures`). The batch
//! functions hand the block cipher many independent blocks at once (16 per
//! VAES pass in [`vaes`], 8 per AES-NI pass in `aes`), which keeps the AES
//! units busy although one AES round has a latency of several cycles.

use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};

/// An expanded AES-128 or AES-256 encryption key.
///
/// Blocks go through RustCrypto's `aes`, or, on x86-64 CPUs with VAES and
/// AVX2, through [`vaes`]'s 16-blocks-per-pass loop: `aes` 0.9 takes its
/// own VAES backend only where `cpufeatures` reports AVX-512 register
/// state, so on AVX2-only CPUs (AMD Zen 3) it would run 8 blocks per
/// AES-NI pass at half the throughput.
#[derive(Clone)]
pub struct AesKey {
    lib: LibAes,
    #[cfg(target_arch = "x86_64")]
    vaes: Option<vaes::Schedule>,
}

#[derive(Clone)]
enum LibAes {
    A128(aes::Aes128),
    A256(aes::Aes256),
}

impl AesKey {
    /// Expands a 16- or 32-byte key.
    pub fn new(key: &[u8]) -> Result<AesKey, String> {
        let lib = match key.len() {
            16 => LibAes::A128(aes::Aes128::new(&Array::from(
                <[u8; 16]>::try_from(key).map_err(|_| "bad key")?,
            ))),
            32 => LibAes::A256(aes::Aes256::new(&Array::from(
                <[u8; 32]>::try_from(key).map_err(|_| "bad key")?,
            ))),
            n => return Err(format!("AES key must be 16 or 32 bytes, not {n}")),
        };
        Ok(AesKey {
            lib,
            #[cfg(target_arch = "x86_64")]
            vaes: vaes::Schedule::new(key),
        })
    }

    /// Key length in bytes.
    pub fn key_len(&self) -> usize {
        match self.lib {
            LibAes::A128(_) => 16,
            LibAes::A256(_) => 32,
        }
    }

    /// Encrypts `blocks` in place (ECB), as many in parallel as the
    /// hardware allows.
    #[inline]
    pub fn encrypt_blocks(&self, blocks: &mut [[u8; 16]]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(v) = &self.vaes {
            v.encrypt_blocks(blocks);
            return;
        }
        let b = Array::cast_slice_from_core_mut(blocks);
        match &self.lib {
            LibAes::A128(c) => c.encrypt_blocks(b),
            LibAes::A256(c) => c.encrypt_blocks(b),
        }
    }

    /// Encrypts one block in place.
    #[inline]
    pub fn encrypt_block(&self, block: &mut [u8; 16]) {
        self.encrypt_blocks(std::slice::from_mut(block));
    }

    /// XORs `data` with the keystream of the counter blocks `first`,
    /// `first + 1`, ..., where only the last 32-bit big-endian word counts
    /// (and wraps), as in RFC 3686 and SP 800-38A with a 32-bit counter
    /// field. With VAES the counters are made, encrypted and applied in
    /// registers, 16 blocks per pass, without a keystream buffer.
    #[inline]
    pub fn apply_ctr32(&self, first: &[u8; 16], data: &mut [u8]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(v) = &self.vaes {
            v.apply_ctr32(first, data);
            return;
        }
        let mut ks = [[0u8; 16]; 16];
        let mut ctr = u32::from_be_bytes([first[12], first[13], first[14], first[15]]);
        for chunk in data.chunks_mut(256) {
            let n = chunk.len().div_ceil(16);
            for b in &mut ks[..n] {
                b[..12].copy_from_slice(&first[..12]);
                b[12..].copy_from_slice(&ctr.to_be_bytes());
                ctr = ctr.wrapping_add(1);
            }
            self.encrypt_blocks(&mut ks[..n]);
            xor_keystream(chunk, &ks[..n]);
        }
    }
}

/// AES with VAES on 256-bit registers (two blocks per instruction), 16
/// blocks per pass so that the AES units' latency is covered. The key
/// schedule is expanded with AES-NI's `aeskeygenassist` (FIPS-197's
/// expansion); both are checked against RustCrypto's `aes` and the
/// FIPS-197 and SP 800-38A vectors in the tests.
#[cfg(target_arch = "x86_64")]
pub mod vaes {
    use std::arch::x86_64::*;

    /// Expanded round keys and the round count (10 or 14).
    #[derive(Clone)]
    pub struct Schedule {
        rk: [[u8; 16]; 15],
        rounds: usize,
    }

    /// True if the CPU has VAES, AVX2 and AES-NI.
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("vaes")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("aes")
    }

    impl Schedule {
        /// The schedule of a 16- or 32-byte key; `None` if the CPU lacks
        /// VAES or the key has another length.
        pub fn new(key: &[u8]) -> Option<Schedule> {
            if !available() || !(key.len() == 16 || key.len() == 32) {
                return None;
            }
            // SAFETY: the CPU has AES-NI (checked above).
            Some(unsafe { expand(key) })
        }

        /// Encrypts `blocks` in place.
        #[inline]
        pub fn encrypt_blocks(&self, blocks: &mut [[u8; 16]]) {
            // SAFETY: a schedule exists only where the CPU has the features.
            unsafe { encrypt(self, blocks) }
        }

        /// See [`super::AesKey::apply_ctr32`].
        #[inline]
        pub fn apply_ctr32(&self, first: &[u8; 16], data: &mut [u8]) {
            // SAFETY: a schedule exists only where the CPU has the features.
            unsafe { ctr32(self, first, data) }
        }
    }

    /// # Safety
    /// The CPU must have VAES, AVX2 and AES-NI.
    #[target_feature(enable = "vaes,avx2,aes")]
    unsafe fn ctr32(s: &Schedule, first: &[u8; 16], data: &mut [u8]) {
        let n = s.rounds;
        let mut rk = [_mm256_setzero_si256(); 15];
        for (i, r) in rk.iter_mut().enumerate().take(n + 1) {
            // SAFETY: 16-byte load from the schedule.
            *r = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(s.rk[i].as_ptr().cast()) });
        }
        // Byte order with the last word little-endian (an involution), so
        // that 32-bit lane adds count in it.
        let swap = _mm256_set_epi8(
            12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 12, 13, 14, 15, 11, 10, 9, 8, 7,
            6, 5, 4, 3, 2, 1, 0,
        );
        // SAFETY: 16-byte load of the first block.
        let f = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(first.as_ptr().cast()) });
        let mut c = _mm256_add_epi32(
            _mm256_shuffle_epi8(f, swap),
            _mm256_set_epi32(1, 0, 0, 0, 0, 0, 0, 0),
        );
        let two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
        let mut chunks = data.chunks_exact_mut(256);
        let pass = |c: &mut __m256i| -> [__m256i; 8] {
            let mut x = [_mm256_setzero_si256(); 8];
            for x in x.iter_mut() {
                *x = _mm256_xor_si256(_mm256_shuffle_epi8(*c, swap), rk[0]);
                *c = _mm256_add_epi32(*c, two);
            }
            for r in &rk[1..n] {
                for x in x.iter_mut() {
                    *x = _mm256_aesenc_epi128(*x, *r);
                }
            }
            for x in x.iter_mut() {
                *x = _mm256_aesenclast_epi128(*x, rk[n]);
            }
            x
        };
        for ch in &mut chunks {
            let ks = pass(&mut c);
            let p = ch.as_mut_ptr() as *mut __m256i;
            for (j, k) in ks.iter().enumerate() {
                // SAFETY: 8 32-byte words within the 256-byte chunk.
                unsafe {
                    let d = _mm256_loadu_si256(p.add(j));
                    _mm256_storeu_si256(p.add(j), _mm256_xor_si256(d, *k));
                }
            }
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let ks = pass(&mut c);
            let mut buf = [0u8; 256];
            for (j, k) in ks.iter().enumerate() {
                // SAFETY: 32-byte store within the buffer.
                unsafe { _mm256_storeu_si256(buf.as_mut_ptr().add(32 * j).cast(), *k) };
            }
            for (d, k) in rest.iter_mut().zip(buf.iter()) {
                *d ^= k;
            }
        }
    }

    #[inline(always)]
    fn spread(a: __m128i, t: __m128i) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            let mut a = a;
            a = _mm_xor_si128(a, _mm_slli_si128::<4>(a));
            a = _mm_xor_si128(a, _mm_slli_si128::<4>(a));
            a = _mm_xor_si128(a, _mm_slli_si128::<4>(a));
            _mm_xor_si128(a, t)
        }
    }

    /// # Safety
    /// The CPU must have AES-NI; `key` is 16 or 32 bytes.
    #[target_feature(enable = "aes,sse2")]
    unsafe fn expand(key: &[u8]) -> Schedule {
        let mut k = [_mm_setzero_si128(); 15];
        // SAFETY: 16-byte loads within the key (its length was checked).
        let ld = |o: usize| unsafe { _mm_loadu_si128(key.as_ptr().add(o).cast()) };
        macro_rules! step128 {
            ($i:expr, $rc:literal) => {
                let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<$rc>(k[$i - 1]));
                k[$i] = spread(k[$i - 1], t);
            };
        }
        macro_rules! even256 {
            ($i:literal, $rc:literal) => {
                let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<$rc>(k[$i - 1]));
                k[$i] = spread(k[$i - 2], t);
            };
        }
        macro_rules! odd256 {
            ($i:literal) => {
                let t = _mm_shuffle_epi32::<0xaa>(_mm_aeskeygenassist_si128::<0>(k[$i - 1]));
                k[$i] = spread(k[$i - 2], t);
            };
        }
        let rounds = if key.len() == 16 {
            k[0] = ld(0);
            step128!(1, 0x01);
            step128!(2, 0x02);
            step128!(3, 0x04);
            step128!(4, 0x08);
            step128!(5, 0x10);
            step128!(6, 0x20);
            step128!(7, 0x40);
            step128!(8, 0x80);
            step128!(9, 0x1b);
            step128!(10, 0x36);
            10
        } else {
            k[0] = ld(0);
            k[1] = ld(16);
            even256!(2, 0x01);
            odd256!(3);
            even256!(4, 0x02);
            odd256!(5);
            even256!(6, 0x04);
            odd256!(7);
            even256!(8, 0x08);
            odd256!(9);
            even256!(10, 0x10);
            odd256!(11);
            even256!(12, 0x20);
            odd256!(13);
            even256!(14, 0x40);
            14
        };
        let mut rk = [[0u8; 16]; 15];
        for (r, k) in rk.iter_mut().zip(k) {
            // SAFETY: 16-byte store into the array.
            unsafe { _mm_storeu_si128(r.as_mut_ptr().cast(), k) };
        }
        Schedule { rk, rounds }
    }

    /// # Safety
    /// The CPU must have VAES, AVX2 and AES-NI.
    #[target_feature(enable = "vaes,avx2,aes")]
    unsafe fn encrypt(s: &Schedule, blocks: &mut [[u8; 16]]) {
        let n = s.rounds;
        let mut k = [_mm_setzero_si128(); 15];
        let mut rk = [_mm256_setzero_si256(); 15];
        for i in 0..=n {
            // SAFETY: 16-byte load from the schedule.
            k[i] = unsafe { _mm_loadu_si128(s.rk[i].as_ptr().cast()) };
            rk[i] = _mm256_broadcastsi128_si256(k[i]);
        }
        let mut chunks = blocks.chunks_exact_mut(16);
        for c in &mut chunks {
            let p = c.as_mut_ptr() as *mut __m256i;
            let mut x = [_mm256_setzero_si256(); 8];
            for (j, x) in x.iter_mut().enumerate() {
                // SAFETY: 16 blocks are 8 256-bit words within the chunk.
                *x = _mm256_xor_si256(unsafe { _mm256_loadu_si256(p.add(j)) }, rk[0]);
            }
            for r in &rk[1..n] {
                for x in x.iter_mut() {
                    *x = _mm256_aesenc_epi128(*x, *r);
                }
            }
            for (j, x) in x.iter().enumerate() {
                let y = _mm256_aesenclast_epi128(*x, rk[n]);
                // SAFETY: as for the loads.
                unsafe { _mm256_storeu_si256(p.add(j), y) };
            }
        }
        for b in chunks.into_remainder() {
            // SAFETY: one 16-byte block.
            let mut x = _mm_xor_si128(unsafe { _mm_loadu_si128(b.as_ptr().cast()) }, k[0]);
            for r in &k[1..n] {
                x = _mm_aesenc_si128(x, *r);
            }
            x = _mm_aesenclast_si128(x, k[n]);
            // SAFETY: as above.
            unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), x) };
        }
    }
}

/// Parses a key written in hexadecimal (spaces and `:` allowed).
pub fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b':')
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|d| {
            let h = |c: u8| (c as char).to_digit(16).ok_or("expected hex digits");
            Ok((h(d[0])? * 16 + h(d[1])?) as u8)
        })
        .collect()
}

/// The 128-bit big-endian counter block `b + n` (SP 800-38A's standard
/// incrementing function over all 128 bits).
#[inline]
pub fn ctr_add(b: &[u8; 16], n: u64) -> [u8; 16] {
    u128::from_be_bytes(*b)
        .wrapping_add(u128::from(n))
        .to_be_bytes()
}

/// XORs `ks` into `data` (`data.len() <= ks.len() * 16`), 16 bytes at a
/// time (the compiler vectorises the loop).
#[inline]
pub fn xor_keystream(data: &mut [u8], ks: &[[u8; 16]]) {
    let (full, tail) = data.as_chunks_mut::<16>();
    for (d, k) in full.iter_mut().zip(ks) {
        let x = u128::from_ne_bytes(*d) ^ u128::from_ne_bytes(*k);
        *d = x.to_ne_bytes();
    }
    if !tail.is_empty() {
        let k = &ks[full.len()];
        for (d, k) in tail.iter_mut().zip(k) {
            *d ^= k;
        }
    }
}

fn dbl(b: &[u8; 16]) -> [u8; 16] {
    let x = u128::from_be_bytes(*b);
    let r = (x << 1) ^ if x >> 127 != 0 { 0x87 } else { 0 };
    r.to_be_bytes()
}

/// AES-CMAC (RFC 4493; with a 32-byte key, the same construction over
/// AES-256) with the subkeys K1 and K2 computed once.
#[derive(Clone)]
pub struct Cmac128 {
    aes: AesKey,
    k1: [u8; 16],
    k2: [u8; 16],
}

/// Messages a [`Cmac128::mac_many`] pass interleaves.
pub const CMAC_LANES: usize = 32;

impl Cmac128 {
    /// Expands the key and derives K1 and K2 (RFC 4493 section 2.3).
    pub fn new(key: &[u8]) -> Result<Cmac128, String> {
        let aes = AesKey::new(key)?;
        let mut l = [0u8; 16];
        aes.encrypt_block(&mut l);
        let k1 = dbl(&l);
        let k2 = dbl(&k1);
        Ok(Cmac128 { aes, k1, k2 })
    }

    /// The subkeys K1 and K2.
    pub fn subkeys(&self) -> ([u8; 16], [u8; 16]) {
        (self.k1, self.k2)
    }

    /// The block cipher.
    pub fn aes(&self) -> &AesKey {
        &self.aes
    }

    /// The MAC of one message.
    pub fn mac(&self, msg: &[u8]) -> [u8; 16] {
        let mut out = [[0u8; 16]];
        self.mac_many(&[msg], &mut out);
        out[0]
    }

    /// CMACs of 16-byte messages, in place: each block becomes
    /// `AES(block ^ K1)`. All blocks go through the cipher together (the
    /// SCION hop-field MAC path).
    #[inline]
    pub fn mac_blocks(&self, blocks: &mut [[u8; 16]]) {
        for b in blocks.iter_mut() {
            *b = (u128::from_ne_bytes(*b) ^ u128::from_ne_bytes(self.k1)).to_ne_bytes();
        }
        self.aes.encrypt_blocks(blocks);
    }

    /// The last block of a message: complete (`^ K1`) or padded (`^ K2`).
    #[inline]
    fn last_block(&self, msg: &[u8]) -> [u8; 16] {
        let n = msg.len();
        let mut b = [0u8; 16];
        let (tail, key) = if n > 0 && n.is_multiple_of(16) {
            (&msg[n - 16..], &self.k1)
        } else {
            let t = &msg[n - n % 16..];
            b[t.len()] = 0x80;
            (t, &self.k2)
        };
        b[..tail.len()].copy_from_slice(tail);
        (u128::from_ne_bytes(b) ^ u128::from_ne_bytes(*key)).to_ne_bytes()
    }

    /// CMACs of `msgs` into `out` (same length). Up to [`CMAC_LANES`]
    /// messages advance together: round `r` XORs block `r` of every
    /// message that has one into its chaining value and encrypts all those
    /// chaining values in one call, so the CBC chains of different packets
    /// fill the AES pipeline.
    pub fn mac_many(&self, msgs: &[&[u8]], out: &mut [[u8; 16]]) {
        assert_eq!(msgs.len(), out.len());
        for (m, o) in msgs.chunks(CMAC_LANES).zip(out.chunks_mut(CMAC_LANES)) {
            self.mac_lanes(m, o);
        }
    }

    fn mac_lanes(&self, msgs: &[&[u8]], out: &mut [[u8; 16]]) {
        let nblocks = |m: &[u8]| m.len().div_ceil(16).max(1);
        let rounds = msgs.iter().map(|m| nblocks(m)).max().unwrap_or(0);
        if rounds == 1 {
            for (o, m) in out.iter_mut().zip(msgs) {
                *o = self.last_block(m);
            }
            self.aes.encrypt_blocks(out);
            return;
        }
        out.fill([0; 16]);
        let mut x = [[0u8; 16]; CMAC_LANES];
        let mut idx = [0u8; CMAC_LANES];
        for r in 0..rounds {
            let mut k = 0;
            for (i, m) in msgs.iter().enumerate() {
                let n = nblocks(m);
                if r >= n {
                    continue;
                }
                let blk = if r + 1 == n {
                    self.last_block(m)
                } else {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(&m[r * 16..r * 16 + 16]);
                    b
                };
                let v = u128::from_ne_bytes(out[i]) ^ u128::from_ne_bytes(blk);
                x[k] = v.to_ne_bytes();
                idx[k] = i as u8;
                k += 1;
            }
            self.aes.encrypt_blocks(&mut x[..k]);
            for j in 0..k {
                out[idx[j] as usize] = x[j];
            }
        }
    }
}

/// Messages [`HmacSha1::mac_sha1_lanes`] hashes in lockstep in the
/// elements (chosen by measurement, `bench/examples/crypto_libs.rs`).
pub const HMAC_SHA1_LANES: usize = 4;

/// Keyed HMAC state: the compression states after the `ipad` and `opad`
/// blocks, so a MAC costs the message's blocks plus one outer block.
#[derive(Clone, Copy)]
pub struct HmacState<const W: usize> {
    inner: [u32; W],
    outer: [u32; W],
}

/// HMAC-SHA1 with precomputed pads.
pub type HmacSha1 = HmacState<5>;
/// HMAC-SHA256 with precomputed pads.
pub type HmacSha256 = HmacState<8>;

/// A hash function's compression function, for [`HmacState`].
pub trait Compress<const W: usize> {
    /// Initial hash value.
    const H0: [u32; W];
    /// Compresses 64-byte blocks into `state`.
    fn compress(state: &mut [u32; W], blocks: &[[u8; 64]]);
}

/// SHA-1's compression (SHA-NI when present).
pub struct Sha1Compress;
/// SHA-256's compression (SHA-NI when present).
pub struct Sha256Compress;

impl Compress<5> for Sha1Compress {
    const H0: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    #[inline]
    fn compress(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
        sha1::block_api::compress(state, blocks);
    }
}

impl Compress<8> for Sha256Compress {
    const H0: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    #[inline]
    fn compress(state: &mut [u32; 8], blocks: &[[u8; 64]]) {
        sha2::block_api::compress256(state, blocks);
    }
}

impl<const W: usize> HmacState<W> {
    /// Keys HMAC for the hash `C` (keys longer than 64 bytes are hashed
    /// first, RFC 2104).
    pub fn new<C: Compress<W>>(key: &[u8]) -> HmacState<W> {
        let mut k = [0u8; 64];
        if key.len() > 64 {
            let mut h = C::H0;
            let d = digest_tail::<C, W>(&mut h, key, 0);
            k[..W * 4].copy_from_slice(&d[..W * 4]);
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let pad = |x: u8| {
            let mut b = k;
            b.iter_mut().for_each(|c| *c ^= x);
            let mut h = C::H0;
            C::compress(&mut h, &[b]);
            h
        };
        HmacState {
            inner: pad(0x36),
            outer: pad(0x5c),
        }
    }

    /// The full-length MAC of `msg` (the first `W * 4` bytes of the result).
    #[inline]
    pub fn mac<C: Compress<W>>(&self, msg: &[u8]) -> [u8; 32] {
        let mut h = self.inner;
        let inner = digest_tail::<C, W>(&mut h, msg, 64);
        let mut blk = [0u8; 64];
        blk[..W * 4].copy_from_slice(&inner[..W * 4]);
        blk[W * 4] = 0x80;
        blk[56..].copy_from_slice(&(((64 + W * 4) as u64) * 8).to_be_bytes());
        let mut h = self.outer;
        C::compress(&mut h, &[blk]);
        state_bytes(&h)
    }
}

fn state_bytes<const W: usize>(h: &[u32; W]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (o, v) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&v.to_be_bytes());
    }
    out
}

/// Hashes `msg` into `h` (which has already absorbed `prefix` bytes) with
/// Merkle-Damgård padding; returns the digest bytes. The message's full
/// blocks are compressed straight from the packet.
#[inline]
fn digest_tail<C: Compress<W>, const W: usize>(
    h: &mut [u32; W],
    msg: &[u8],
    prefix: u64,
) -> [u8; 32] {
    let (full, tail) = msg.as_chunks::<64>();
    C::compress(h, full);
    let mut last = [[0u8; 64]; 2];
    let flat = last.as_flattened_mut();
    flat[..tail.len()].copy_from_slice(tail);
    flat[tail.len()] = 0x80;
    let nb = if tail.len() < 56 { 1 } else { 2 };
    let bits = (prefix + msg.len() as u64) * 8;
    flat[nb * 64 - 8..nb * 64].copy_from_slice(&bits.to_be_bytes());
    C::compress(h, &last[..nb]);
    state_bytes(h)
}

/// SHA-1 compression of `N` independent messages in lockstep with the SHA
/// extensions: the instructions of the `N` streams interleave, so one
/// stream's `sha1rnds4` issues while another's waits on its latency (the
/// CPU form of a multi-buffer hash).
#[cfg(target_arch = "x86_64")]
mod sha1_lanes {
    use std::arch::x86_64::*;

    /// True if the CPU has the SHA extensions and SSE4.1.
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1")
    }

    /// One block into each of `N` states.
    ///
    /// # Safety
    /// The CPU must have the `sha`, `sse2`, `ssse3` and `sse4.1` features
    /// ([`available`]).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub unsafe fn compress<const N: usize>(states: &mut [[u32; 5]; N], blocks: [&[u8; 64]; N]) {
        // Byte-reverses a 16-byte chunk: big-endian words, W0 in the top lane.
        let rev = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
        let mut abcd = [_mm_setzero_si128(); N];
        let mut e_save = [_mm_setzero_si128(); N];
        let mut w = [[_mm_setzero_si128(); 4]; N];
        for l in 0..N {
            // SAFETY: 16-byte unaligned loads within the state and block.
            let s = unsafe { _mm_loadu_si128(states[l].as_ptr().cast()) };
            abcd[l] = _mm_shuffle_epi32::<0x1b>(s);
            e_save[l] = _mm_set_epi32(states[l][4] as i32, 0, 0, 0);
            for (k, wk) in w[l].iter_mut().enumerate() {
                // SAFETY: as above.
                let m = unsafe { _mm_loadu_si128(blocks[l].as_ptr().add(16 * k).cast()) };
                *wk = _mm_shuffle_epi8(m, rev);
            }
        }
        let abcd_save = abcd;
        let mut e = [_mm_setzero_si128(); N];
        for l in 0..N {
            e[l] = _mm_add_epi32(e_save[l], w[l][0]);
        }
        // Group g (rounds 4g..4g+3) uses message vector g; w[l][g % 4]
        // holds it, computed 4 groups ahead as the schedule needs.
        macro_rules! group {
            ($g:literal, $f:literal) => {
                for l in 0..N {
                    let prev = abcd[l];
                    abcd[l] = _mm_sha1rnds4_epu32::<$f>(abcd[l], e[l]);
                    if $g < 19 {
                        if $g + 1 >= 4 {
                            let t = ($g + 1) % 4;
                            let x = _mm_sha1msg1_epu32(w[l][t], w[l][(t + 1) % 4]);
                            let x = _mm_xor_si128(x, w[l][(t + 2) % 4]);
                            w[l][t] = _mm_sha1msg2_epu32(x, w[l][(t + 3) % 4]);
                        }
                        e[l] = _mm_sha1nexte_epu32(prev, w[l][($g + 1) % 4]);
                    } else {
                        e[l] = _mm_sha1nexte_epu32(prev, e_save[l]);
                    }
                }
            };
        }
        group!(0, 0);
        group!(1, 0);
        group!(2, 0);
        group!(3, 0);
        group!(4, 0);
        group!(5, 1);
        group!(6, 1);
        group!(7, 1);
        group!(8, 1);
        group!(9, 1);
        group!(10, 2);
        group!(11, 2);
        group!(12, 2);
        group!(13, 2);
        group!(14, 2);
        group!(15, 3);
        group!(16, 3);
        group!(17, 3);
        group!(18, 3);
        group!(19, 3);
        for l in 0..N {
            let s = _mm_shuffle_epi32::<0x1b>(_mm_add_epi32(abcd[l], abcd_save[l]));
            // SAFETY: 16-byte unaligned store within the state.
            unsafe { _mm_storeu_si128(states[l].as_mut_ptr().cast(), s) };
            states[l][4] = _mm_extract_epi32::<3>(e[l]) as u32;
        }
    }
}

/// SHA-1 compression of 16 independent messages at once in the lanes of
/// AVX-512 registers (one 32-bit word of each message a lane), the CPU form
/// of a multi-buffer hash that needs no SHA extensions. Where `sha1rnds4`
/// is slow (Intel's P-cores: 1.7-2.0 GB/s with 1 to 4 messages in
/// lockstep, session 11) this is the faster path.
#[cfg(target_arch = "x86_64")]
mod sha1_x16 {
    use std::arch::x86_64::*;

    /// True if the CPU has AVX-512F and AVX-512BW.
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }

    /// Word `t` (big-endian) of each of the 16 blocks, lane `l` from
    /// `blocks[l]`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn word(lo: __m512i, hi: __m512i, base: *const i32, t: i32, swap: __m512i) -> __m512i {
        let off = _mm512_set1_epi64(i64::from(4 * t));
        // SAFETY: every lane's address is a block's word `t`, inside its
        // 64 bytes (the caller's offsets are the blocks' distances from
        // `base`).
        let (a, b) = unsafe {
            (
                _mm512_i64gather_epi32::<1>(_mm512_add_epi64(lo, off), base),
                _mm512_i64gather_epi32::<1>(_mm512_add_epi64(hi, off), base),
            )
        };
        let w = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(a), b);
        _mm512_shuffle_epi8(w, swap)
    }

    /// One block into each of 16 states.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512BW ([`available`]).
    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn compress(states: &mut [[u32; 5]; 16], blocks: [&[u8; 64]; 16]) {
        let base = blocks[0].as_ptr() as *const i32;
        let d: [i64; 16] =
            std::array::from_fn(|l| (blocks[l].as_ptr() as i64).wrapping_sub(base as i64));
        // SAFETY: 64-byte unaligned loads of the two halves of `d`.
        let (lo, hi) = unsafe {
            (
                _mm512_loadu_si512(d.as_ptr().cast()),
                _mm512_loadu_si512(d.as_ptr().add(8).cast()),
            )
        };
        // Reverses the bytes of each 32-bit word.
        let swap = _mm512_broadcast_i32x4(_mm_set_epi8(
            12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3,
        ));
        let mut w = [_mm512_setzero_si512(); 16];
        for (t, wt) in w.iter_mut().enumerate() {
            // SAFETY: see `word`.
            *wt = unsafe { word(lo, hi, base, t as i32, swap) };
        }
        let col = |k: usize| {
            let v: [u32; 16] = std::array::from_fn(|l| states[l][k]);
            // SAFETY: a 64-byte unaligned load of `v`.
            unsafe { _mm512_loadu_si512(v.as_ptr().cast()) }
        };
        let init = [col(0), col(1), col(2), col(3), col(4)];
        let [mut a, mut b, mut c, mut dd, mut e] = init;
        // The rounds written out (a loop kept the message words in memory
        // at run-time indices): 80 rounds over registers, round `$g + $t`
        // for `$t` in 0..20 of group `$g`.
        macro_rules! rounds {
            ($f:literal, $k:literal, $g:literal) => {
                rounds!(@ $f, $k, $g, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19])
            };
            (@ $f:literal, $k:literal, $g:literal, [$($t:literal),*]) => {
                let k = _mm512_set1_epi32($k as i32);
                $(
                    let t = $g + $t;
                    if t >= 16 {
                        let x = _mm512_ternarylogic_epi32::<0x96>(
                            w[(t + 13) % 16],
                            w[(t + 8) % 16],
                            w[(t + 2) % 16],
                        );
                        w[t % 16] = _mm512_rol_epi32::<1>(_mm512_xor_si512(x, w[t % 16]));
                    }
                    let f = _mm512_ternarylogic_epi32::<$f>(b, c, dd);
                    let tmp = _mm512_add_epi32(
                        _mm512_add_epi32(_mm512_rol_epi32::<5>(a), f),
                        _mm512_add_epi32(_mm512_add_epi32(e, k), w[t % 16]),
                    );
                    e = dd;
                    dd = c;
                    c = _mm512_rol_epi32::<30>(b);
                    b = a;
                    a = tmp;
                )*
            };
        }
        rounds!(0xCA, 0x5A82_7999u32, 0);
        rounds!(0x96, 0x6ED9_EBA1u32, 20);
        rounds!(0xE8, 0x8F1B_BCDCu32, 40);
        rounds!(0x96, 0xCA62_C1D6u32, 60);
        let fin = [a, b, c, dd, e];
        for k in 0..5 {
            let mut v = [0u32; 16];
            // SAFETY: a 64-byte unaligned store into `v`.
            unsafe {
                _mm512_storeu_si512(v.as_mut_ptr().cast(), _mm512_add_epi32(fin[k], init[k]))
            };
            for (st, x) in states.iter_mut().zip(v) {
                st[k] = x;
            }
        }
    }
}

/// SHA-256 compression of `N` independent messages in lockstep with the SHA
/// extensions, as [`sha1_lanes`] does for SHA-1: `sha256rnds2` has a
/// latency of several cycles and each stream's next one depends on it, so
/// the `N` streams' instructions interleave to fill the unit.
#[cfg(target_arch = "x86_64")]
mod sha256_lanes {
    use std::arch::x86_64::*;

    /// SHA-256's round constants (FIPS 180-4 section 4.2.2).
    static K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    /// True if the CPU has the SHA extensions and SSE4.1.
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1")
    }

    /// One block into each of `N` states.
    ///
    /// # Safety
    /// The CPU must have the `sha`, `sse2`, `ssse3` and `sse4.1` features
    /// ([`available`]).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub unsafe fn compress<const N: usize>(states: &mut [[u32; 8]; N], blocks: [&[u8; 64]; N]) {
        // Byte-reverses each 32-bit word: big-endian message words.
        let rev = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
        // The state as `sha256rnds2` wants it: ABEF and CDGH.
        let mut abef = [_mm_setzero_si128(); N];
        let mut cdgh = [_mm_setzero_si128(); N];
        for l in 0..N {
            // SAFETY: 16-byte unaligned loads within the state.
            let (s0, s1) = unsafe {
                (
                    _mm_loadu_si128(states[l].as_ptr().cast()),
                    _mm_loadu_si128(states[l].as_ptr().add(4).cast()),
                )
            };
            let cdab = _mm_shuffle_epi32::<0xb1>(s0);
            let efgh = _mm_shuffle_epi32::<0x1b>(s1);
            abef[l] = _mm_alignr_epi8::<8>(cdab, efgh);
            cdgh[l] = _mm_blend_epi16::<0xf0>(efgh, cdab);
        }
        let (abef_save, cdgh_save) = (abef, cdgh);
        let mut w = [[_mm_setzero_si128(); 4]; N];
        // Group g (rounds 4g..4g+3) uses message vector g, held in
        // w[l][g % 4]: the first four loaded, the rest computed one group
        // ahead (`sha256msg2`) from partial sums begun three groups ahead
        // (`sha256msg1`).
        macro_rules! group {
            ($g:literal) => {
                // SAFETY: a 16-byte unaligned load within `K`.
                let k = unsafe { _mm_loadu_si128(K.as_ptr().add(4 * $g).cast()) };
                for l in 0..N {
                    if $g < 4 {
                        // SAFETY: a 16-byte unaligned load within the block.
                        let m = unsafe { _mm_loadu_si128(blocks[l].as_ptr().add(16 * $g).cast()) };
                        w[l][$g % 4] = _mm_shuffle_epi8(m, rev);
                    }
                    let msg = _mm_add_epi32(w[l][$g % 4], k);
                    cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], msg);
                    if $g >= 3 && $g < 15 {
                        let t = _mm_alignr_epi8::<4>(w[l][$g % 4], w[l][($g + 3) % 4]);
                        let x = _mm_add_epi32(w[l][($g + 1) % 4], t);
                        w[l][($g + 1) % 4] = _mm_sha256msg2_epu32(x, w[l][$g % 4]);
                    }
                    let msg = _mm_shuffle_epi32::<0x0e>(msg);
                    abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], msg);
                    if $g >= 1 && $g <= 12 {
                        w[l][($g + 3) % 4] = _mm_sha256msg1_epu32(w[l][($g + 3) % 4], w[l][$g % 4]);
                    }
                }
            };
        }
        group!(0);
        group!(1);
        group!(2);
        group!(3);
        group!(4);
        group!(5);
        group!(6);
        group!(7);
        group!(8);
        group!(9);
        group!(10);
        group!(11);
        group!(12);
        group!(13);
        group!(14);
        group!(15);
        for l in 0..N {
            let feba = _mm_shuffle_epi32::<0x1b>(_mm_add_epi32(abef[l], abef_save[l]));
            let dchg = _mm_shuffle_epi32::<0xb1>(_mm_add_epi32(cdgh[l], cdgh_save[l]));
            let abcd = _mm_blend_epi16::<0xf0>(feba, dchg);
            let efgh = _mm_alignr_epi8::<8>(dchg, feba);
            // SAFETY: 16-byte unaligned stores within the state.
            unsafe {
                _mm_storeu_si128(states[l].as_mut_ptr().cast(), abcd);
                _mm_storeu_si128(states[l].as_mut_ptr().add(4).cast(), efgh);
            }
        }
    }
}

/// A message's 64-byte blocks after `prefix` bytes already hashed: its
/// full blocks in place, then one or two padded tail blocks.
struct Blocks<'a> {
    full: &'a [[u8; 64]],
    tail: [[u8; 64]; 2],
    n: usize,
}

impl<'a> Blocks<'a> {
    fn new(msg: &'a [u8], prefix: u64) -> Blocks<'a> {
        let (full, t) = msg.as_chunks::<64>();
        let mut tail = [[0u8; 64]; 2];
        let flat = tail.as_flattened_mut();
        flat[..t.len()].copy_from_slice(t);
        flat[t.len()] = 0x80;
        let nt = if t.len() < 56 { 1 } else { 2 };
        let bits = (prefix + msg.len() as u64) * 8;
        flat[nt * 64 - 8..nt * 64].copy_from_slice(&bits.to_be_bytes());
        Blocks {
            full,
            tail,
            n: full.len() + nt,
        }
    }

    #[inline]
    fn get(&self, i: usize) -> &[u8; 64] {
        match self.full.get(i) {
            Some(b) => b,
            None => &self.tail[i - self.full.len()],
        }
    }
}

impl HmacState<5> {
    /// HMAC-SHA1 of `msgs` into `out` (same length; the first 20 bytes of
    /// each), `L` messages at a time through the SHA extensions in lockstep
    /// (`L` = 1 to 4; see [`HMAC_SHA1_LANES`]). Without the SHA extensions,
    /// one message at a time.
    pub fn mac_sha1_lanes<const L: usize>(&self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        assert_eq!(msgs.len(), out.len());
        #[cfg(target_arch = "x86_64")]
        if sha1_lanes::available() {
            let mut groups = msgs.chunks_exact(L);
            let mut outs = out.chunks_exact_mut(L);
            for (m, o) in (&mut groups).zip(&mut outs) {
                // SAFETY: the CPU has the SHA extensions (checked above).
                unsafe { self.sha1_group::<L>(m, o, sha1_lanes::compress::<L>) };
            }
            for (m, o) in groups.remainder().iter().zip(outs.into_remainder()) {
                *o = self.mac::<Sha1Compress>(m);
            }
            return;
        }
        for (m, o) in msgs.iter().zip(out.iter_mut()) {
            *o = self.mac::<Sha1Compress>(m);
        }
    }

    /// HMAC-SHA1 of `msgs` into `out` as the elements want it: groups of 16
    /// in the lanes of AVX-512 registers where the CPU has AVX-512F and BW,
    /// the rest (and everything without them) through
    /// [`mac_sha1_lanes`](Self::mac_sha1_lanes) with [`HMAC_SHA1_LANES`].
    pub fn mac_sha1_batch(&self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        assert_eq!(msgs.len(), out.len());
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if sha1_x16::available() {
            for (m, o) in msgs.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
                // SAFETY: the CPU has AVX-512F and BW (checked above).
                unsafe { self.sha1_group::<16>(m, o, sha1_x16::compress) };
                done += 16;
            }
        }
        self.mac_sha1_lanes::<HMAC_SHA1_LANES>(&msgs[done..], &mut out[done..]);
    }

    /// The MACs of `L` messages, their common blocks (and the outer block)
    /// through `compress`, the rest one message at a time.
    ///
    /// # Safety
    /// The CPU must have the features `compress` needs.
    #[cfg(target_arch = "x86_64")]
    unsafe fn sha1_group<const L: usize>(
        &self,
        msgs: &[&[u8]],
        out: &mut [[u8; 32]],
        compress: unsafe fn(&mut [[u32; 5]; L], [&[u8; 64]; L]),
    ) {
        let streams: [Blocks<'_>; L] = std::array::from_fn(|l| Blocks::new(msgs[l], 64));
        let mut st = [self.inner; L];
        let common = streams.iter().map(|s| s.n).min().unwrap_or(0);
        for i in 0..common {
            let b: [&[u8; 64]; L] = std::array::from_fn(|l| streams[l].get(i));
            // SAFETY: the caller checked the CPU features.
            unsafe { compress(&mut st, b) };
        }
        for (s, h) in streams.iter().zip(st.iter_mut()) {
            for i in common..s.n {
                Sha1Compress::compress(h, std::slice::from_ref(s.get(i)));
            }
        }
        let outer: [[u8; 64]; L] = std::array::from_fn(|l| {
            let mut blk = [0u8; 64];
            blk[..20].copy_from_slice(&state_bytes(&st[l])[..20]);
            blk[20] = 0x80;
            blk[56..].copy_from_slice(&((64 + 20) as u64 * 8).to_be_bytes());
            blk
        });
        let mut fin = [self.outer; L];
        // SAFETY: as above.
        unsafe { compress(&mut fin, std::array::from_fn(|l| &outer[l])) };
        for (o, h) in out.iter_mut().zip(fin.iter()) {
            *o = state_bytes(h);
        }
    }
}

/// Messages [`HmacSha256::mac_sha256_batch`] hashes in lockstep (chosen by
/// measurement, `bench/examples/crypto_libs.rs`).
pub const HMAC_SHA256_LANES: usize = 4;

impl HmacState<8> {
    /// HMAC-SHA256 of `msgs` into `out` (same length), `L` messages at a
    /// time through the SHA extensions in lockstep (`L` = 1 to 4), pairs
    /// then single messages for the rest. Without the SHA extensions (or
    /// off x86-64), one message at a time through RustCrypto's `sha2`.
    pub fn mac_sha256_lanes<const L: usize>(&self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        assert_eq!(msgs.len(), out.len());
        #[cfg(target_arch = "x86_64")]
        if sha256_lanes::available() {
            let mut groups = msgs.chunks_exact(L);
            let mut outs = out.chunks_exact_mut(L);
            for (m, o) in (&mut groups).zip(&mut outs) {
                // SAFETY: the CPU has the SHA extensions (checked above).
                unsafe { self.sha256_group::<L>(m, o) };
            }
            let (msgs, out) = (groups.remainder(), outs.into_remainder());
            let mut pairs = msgs.chunks_exact(2);
            let mut outs = out.chunks_exact_mut(2);
            for (m, o) in (&mut pairs).zip(&mut outs) {
                // SAFETY: as above.
                unsafe { self.sha256_group::<2>(m, o) };
            }
            for (m, o) in pairs.remainder().iter().zip(outs.into_remainder()) {
                *o = self.mac::<Sha256Compress>(m);
            }
            return;
        }
        for (m, o) in msgs.iter().zip(out.iter_mut()) {
            *o = self.mac::<Sha256Compress>(m);
        }
    }

    /// HMAC-SHA256 of `msgs` into `out` as the elements want it:
    /// [`mac_sha256_lanes`](Self::mac_sha256_lanes) with
    /// [`HMAC_SHA256_LANES`].
    #[inline]
    pub fn mac_sha256_batch(&self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        self.mac_sha256_lanes::<HMAC_SHA256_LANES>(msgs, out);
    }

    /// The MACs of `L` messages, their common blocks (and the outer block)
    /// in lockstep, the rest one message at a time.
    ///
    /// # Safety
    /// The CPU must have the SHA extensions ([`sha256_lanes::available`]).
    #[cfg(target_arch = "x86_64")]
    unsafe fn sha256_group<const L: usize>(&self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        let streams: [Blocks<'_>; L] = std::array::from_fn(|l| Blocks::new(msgs[l], 64));
        let mut st = [self.inner; L];
        let common = streams.iter().map(|s| s.n).min().unwrap_or(0);
        for i in 0..common {
            let b: [&[u8; 64]; L] = std::array::from_fn(|l| streams[l].get(i));
            // SAFETY: the caller checked the CPU features.
            unsafe { sha256_lanes::compress::<L>(&mut st, b) };
        }
        for (s, h) in streams.iter().zip(st.iter_mut()) {
            for i in common..s.n {
                Sha256Compress::compress(h, std::slice::from_ref(s.get(i)));
            }
        }
        let outer: [[u8; 64]; L] = std::array::from_fn(|l| {
            let mut blk = [0u8; 64];
            blk[..32].copy_from_slice(&state_bytes(&st[l]));
            blk[32] = 0x80;
            blk[56..].copy_from_slice(&((64 + 32) as u64 * 8).to_be_bytes());
            blk
        });
        let mut fin = [self.outer; L];
        // SAFETY: as above.
        unsafe { sha256_lanes::compress::<L>(&mut fin, std::array::from_fn(|l| &outer[l])) };
        for (o, h) in out.iter_mut().zip(fin.iter()) {
            *o = state_bytes(h);
        }
    }
}
