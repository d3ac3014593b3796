//! Reusable batch crypto primitives behind the crypto elements, public so
//! that other elements (the SCION router's hop-field MAC) can call them.
//!
//! All of them use RustCrypto's `aes`, `sha1` and `sha2` crates, which pick
//! AES-NI/VAES and the SHA extensions at run time (`cpufeatures`). The batch
//! functions hand the block cipher many independent blocks at once: the
//! `aes` crate encrypts 30 blocks per VAES (AVX2) pass or 8 per AES-NI pass,
//! which keeps the AES units busy although one AES round has a latency of
//! several cycles.

use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};

/// An expanded AES-128 or AES-256 encryption key.
#[derive(Clone)]
pub enum AesKey {
    /// AES-128 (16-byte key).
    Aes128(aes::Aes128),
    /// AES-256 (32-byte key).
    Aes256(aes::Aes256),
}

impl AesKey {
    /// Expands a 16- or 32-byte key.
    pub fn new(key: &[u8]) -> Result<AesKey, String> {
        match key.len() {
            16 => Ok(AesKey::Aes128(aes::Aes128::new(&Array::from(
                <[u8; 16]>::try_from(key).map_err(|_| "bad key")?,
            )))),
            32 => Ok(AesKey::Aes256(aes::Aes256::new(&Array::from(
                <[u8; 32]>::try_from(key).map_err(|_| "bad key")?,
            )))),
            n => Err(format!("AES key must be 16 or 32 bytes, not {n}")),
        }
    }

    /// Key length in bytes.
    pub fn key_len(&self) -> usize {
        match self {
            AesKey::Aes128(_) => 16,
            AesKey::Aes256(_) => 32,
        }
    }

    /// Encrypts `blocks` in place (ECB), as many in parallel as the
    /// hardware allows.
    #[inline]
    pub fn encrypt_blocks(&self, blocks: &mut [[u8; 16]]) {
        let b = Array::cast_slice_from_core_mut(blocks);
        match self {
            AesKey::Aes128(c) => c.encrypt_blocks(b),
            AesKey::Aes256(c) => c.encrypt_blocks(b),
        }
    }

    /// Encrypts one block in place.
    #[inline]
    pub fn encrypt_block(&self, block: &mut [u8; 16]) {
        self.encrypt_blocks(std::slice::from_mut(block));
    }
}

/// Parses a key written in hexadecimal (spaces and `:` allowed).
pub fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b':')
        .collect();
    if digits.len() % 2 != 0 {
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
        let (tail, key) = if n > 0 && n % 16 == 0 {
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
