//! SCION hop-field MAC (§6 of the data-plane specification): forwarding
//! key derivation with PBKDF2 as the reference router does, and AES-128-CMAC
//! (RFC 4493) over the 16-byte MAC input block.
//!
//! With one full block, CMAC is `AES_K(M ^ K1)` where `K1` is the first
//! subkey; [`HopMac`] computes `K1` once and then costs a single AES block
//! per MAC (the crypto category's `Cmac128`: VAES or AES-NI, several blocks
//! per call so the rounds of independent blocks overlap). [`cmac_reference`]
//! is the textbook RFC 4493 algorithm (subkeys derived on every call) for
//! `IMPL reference` and the tests.

use crate::crypto::primitives::Cmac128;
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes::{Aes128, Block};

/// The PBKDF2 salt of the reference (`scrypto.HFMacFactory`).
pub const SALT: &[u8] = b"Derive OF Key";
/// PBKDF2 iterations.
pub const ITERATIONS: u32 = 1000;

/// `K_fwd = PBKDF2-HMAC-SHA256(master, "Derive OF Key", 1000, 16)`.
pub fn derive_key(master: &[u8]) -> [u8; 16] {
    pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 16>(master, SALT, ITERATIONS)
}

/// The MAC input block for a hop (§6): `0 0 SegID Timestamp 0 ExpTime
/// ConsIngress ConsEgress 0 0`.
#[inline]
pub fn mac_input(
    seg_id: u16,
    timestamp: u32,
    exp_time: u8,
    cons_in: u16,
    cons_eg: u16,
) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[2..4].copy_from_slice(&seg_id.to_be_bytes());
    b[4..8].copy_from_slice(&timestamp.to_be_bytes());
    b[9] = exp_time;
    b[10..12].copy_from_slice(&cons_in.to_be_bytes());
    b[12..14].copy_from_slice(&cons_eg.to_be_bytes());
    b
}

/// RFC 4493 subkey doubling in GF(2^128).
fn dbl(x: u128) -> u128 {
    let carry = x >> 127;
    (x << 1) ^ (carry * 0x87)
}

/// A precomputed hop-field MAC: the crypto category's [`Cmac128`] (key
/// schedule and subkeys computed once; VAES when the CPU has it).
#[derive(Clone)]
pub struct HopMac {
    cmac: Cmac128,
    k1: u128,
}

impl HopMac {
    /// Precomputes the cipher for a forwarding key.
    pub fn new(key: &[u8; 16]) -> HopMac {
        let cmac = Cmac128::new(key).expect("a 16-byte key is a valid AES-128 key");
        let k1 = u128::from_ne_bytes(cmac.subkeys().0);
        HopMac { cmac, k1 }
    }

    /// Full 16-byte CMAC of one block.
    #[inline]
    pub fn cmac(&self, input: &[u8; 16]) -> [u8; 16] {
        let mut b = [*input];
        self.cmac.mac_blocks(&mut b);
        b[0]
    }

    /// Prepares `input` for [`finish_blocks`](Self::finish_blocks): XORs K1.
    #[inline]
    pub fn prepare(&self, input: &[u8; 16]) -> [u8; 16] {
        (u128::from_ne_bytes(*input) ^ self.k1).to_ne_bytes()
    }

    /// Encrypts prepared blocks in place (pipelined across blocks).
    #[inline]
    pub fn finish_blocks(&self, blocks: &mut [[u8; 16]]) {
        self.cmac.aes().encrypt_blocks(blocks);
    }
}

/// RFC 4493 AES-CMAC of `msg` under `key`, computed from scratch (subkeys
/// derived on every call).
pub fn cmac_reference(key: &[u8; 16], msg: &[u8]) -> [u8; 16] {
    let aes = Aes128::new(&(*key).into());
    let enc = |x: u128| -> u128 {
        let mut b = Block::from(x.to_be_bytes());
        aes.encrypt_block(&mut b);
        let a: [u8; 16] = b.into();
        u128::from_be_bytes(a)
    };
    let k1 = dbl(enc(0));
    let k2 = dbl(k1);
    let n = msg.len().div_ceil(16).max(1);
    let complete = !msg.is_empty() && msg.len().is_multiple_of(16);
    let mut x = 0u128;
    for i in 0..n {
        let chunk = &msg[16 * i..msg.len().min(16 * i + 16)];
        let mut blk = [0u8; 16];
        blk[..chunk.len()].copy_from_slice(chunk);
        let mut m = u128::from_be_bytes(blk);
        if i == n - 1 {
            if complete {
                m ^= k1;
            } else {
                m ^= 0x80u128 << (8 * (15 - chunk.len()));
                m ^= k2;
            }
        }
        x = enc(x ^ m);
    }
    x.to_be_bytes()
}

/// Constant-time comparison of the 6-byte hop MAC.
#[inline]
pub fn mac_equal(a: &[u8], b: &[u8]) -> bool {
    let mut d = 0u8;
    for i in 0..6 {
        d |= a[i] ^ b[i];
    }
    d == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    const KEY: &str = "61fdda2c5a7316a4c2c3bf65d1f97ddb";

    #[test]
    fn key_derivation_vector() {
        assert_eq!(derive_key(b"scion-vectors-k0").to_vec(), hex(KEY));
    }

    #[test]
    fn mac_vectors() {
        let key: [u8; 16] = hex(KEY).try_into().unwrap();
        let m = HopMac::new(&key);
        for (seg, ts, exp, i, e, input, full) in [
            (
                0x0000,
                1700000000,
                0,
                0,
                1,
                "000000006553f1000000000000010000",
                "b60ecdf41029deba25da662e19988e9d",
            ),
            (
                0x1111,
                1700000000,
                63,
                1,
                2,
                "000011116553f100003f000100020000",
                "e9e79c461473b94e9dd48aa85d34b460",
            ),
            (
                0xffff,
                1700000000,
                255,
                65535,
                0,
                "0000ffff6553f10000ffffff00000000",
                "2aa797f2c91b588f46e7c8ad912e040a",
            ),
            (
                0xbeef,
                1700000001,
                1,
                42,
                4242,
                "0000beef6553f1010001002a10920000",
                "84984ac11f2e203cb8193ed159ce3b9a",
            ),
        ] {
            let blk = mac_input(seg, ts, exp, i, e);
            assert_eq!(blk.to_vec(), hex(input));
            assert_eq!(m.cmac(&blk).to_vec(), hex(full));
            assert_eq!(cmac_reference(&key, &blk).to_vec(), hex(full));
            let mut b = [m.prepare(&blk)];
            m.finish_blocks(&mut b);
            let got: [u8; 16] = b[0];
            assert_eq!(got.to_vec(), hex(full));
        }
    }

    #[test]
    fn rfc4493_vectors() {
        let key: [u8; 16] = hex("2b7e151628aed2a6abf7158809cf4f3c").try_into().unwrap();
        assert_eq!(
            cmac_reference(&key, &[]).to_vec(),
            hex("bb1d6929e95937287fa37d129b756746")
        );
        let m =
            hex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411");
        assert_eq!(
            cmac_reference(&key, &m).to_vec(),
            hex("dfa66747de9ae63030ca32611497c827")
        );
        assert_eq!(
            cmac_reference(&key, &m[..16]).to_vec(),
            hex("070a16b46b4d4144f79bdd9dd04a287c")
        );
    }

    #[test]
    fn constant_time_compare() {
        assert!(mac_equal(&[1, 2, 3, 4, 5, 6], &[1, 2, 3, 4, 5, 6, 7]));
        assert!(!mac_equal(&[1, 2, 3, 4, 5, 6], &[1, 2, 3, 4, 5, 7]));
    }
}
