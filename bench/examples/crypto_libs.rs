//! Which crypto library for the crypto elements: RustCrypto (`aes`, `ctr`,
//! `hmac`, `sha1`, `sha2`, `cmac`, with AES-NI/VAES and SHA-NI picked at
//! run time) against `ring`, on one core, for the operations the elements
//! perform: AES-256 counter-mode keystream, HMAC-SHA1 and HMAC-SHA256 over
//! 1500-byte messages, and AES-128-CMAC of one 16-byte block.
//!
//! `ring` has no raw CTR mode and no CMAC: its AES-256-GCM (CTR plus
//! GHASH) bounds what its AES-CTR could do. `ring` is a dev-dependency of
//! this package only, so the `linerate` binary does not link it.
//!
//! Run: `cargo run --release -p linerate-bench --example crypto_libs`.

use aes::cipher::{KeyIvInit, StreamCipher};
use hmac::{KeyInit, Mac};
use linerate_elements::crypto::primitives::{
    AesKey, Cmac128, HmacSha1, HmacSha256, Sha1Compress, Sha256Compress,
};
use std::hint::black_box;

const LEN: usize = 1500;
const KEY256: [u8; 32] = [7; 32];

use linerate_model::calibrate::thread_cpu_seconds as cpu_seconds;

/// Runs `f` for about 0.3 s of CPU time after a warm-up, five times;
/// returns the median CPU nanoseconds per call.
fn time(mut f: impl FnMut()) -> f64 {
    for _ in 0..200 {
        f();
    }
    let mut runs = Vec::new();
    for _ in 0..5 {
        let mut n = 0u64;
        let t = cpu_seconds();
        while cpu_seconds() - t < 0.1 {
            for _ in 0..100 {
                f();
            }
            n += 100;
        }
        runs.push((cpu_seconds() - t) * 1e9 / n as f64);
    }
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn row(lib: &str, what: &str, ns: f64, bytes: usize) {
    println!(
        "| {lib} | {what} | {ns:.1} | {:.2} | {:.1} |",
        bytes as f64 / ns,
        1e3 / ns
    );
}

fn main() {
    println!("| library | operation | ns per call | GB/s | M calls/s |");
    println!("|---|---|---:|---:|---:|");
    let mut buf = vec![0x5au8; LEN * 8];

    // AES-256 keystream, 8 packets of 1500 B per call.
    let aes = AesKey::new(&KEY256).unwrap();
    let mut ks = vec![[0u8; 16]; (LEN * 8).div_ceil(16)];
    let ns = time(|| {
        aes.encrypt_blocks(black_box(&mut ks));
    });
    row(
        "linerate VAES (AesKey, 750 blocks)",
        "AES-256 keystream",
        ns,
        LEN * 8,
    );
    {
        use aes::cipher::{Array, BlockCipherEncrypt};
        let c = <aes::Aes256 as KeyInit>::new(&Array::from(KEY256));
        let mut ks: Vec<Array<u8, _>> = vec![Array::from([0u8; 16]); 750];
        let ns = time(|| {
            c.encrypt_blocks(black_box(&mut ks));
        });
        row(
            "RustCrypto aes (encrypt_blocks, 750 blocks)",
            "AES-256 keystream",
            ns,
            LEN * 8,
        );
    }
    let ns = time(|| {
        for p in buf.chunks_mut(LEN) {
            let mut c = ctr::Ctr128BE::<aes::Aes256>::new_from_slices(&KEY256, &[1; 16]).unwrap();
            c.apply_keystream(black_box(p));
        }
    });
    row(
        "RustCrypto ctr (per packet)",
        "AES-256-CTR 8 x 1500 B",
        ns,
        LEN * 8,
    );
    {
        use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
        let k = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &KEY256).unwrap());
        let ns = time(|| {
            for p in buf.chunks_mut(LEN) {
                let n = Nonce::assume_unique_for_key([3; 12]);
                let t = k.seal_in_place_separate_tag(n, Aad::empty(), black_box(p));
                black_box(t.ok());
            }
        });
        row(
            "ring (no CTR: AES-256-GCM)",
            "AES-256-GCM 8 x 1500 B",
            ns,
            LEN * 8,
        );
    }

    // HMAC over 1500 B.
    let msg = vec![0x33u8; LEN];
    let key = [0x0bu8; 20];
    let h1 = HmacSha1::new::<Sha1Compress>(&key);
    let ns = time(|| {
        black_box(h1.mac::<Sha1Compress>(black_box(&msg)));
    });
    row(
        "RustCrypto sha1 compress, pads precomputed",
        "HMAC-SHA1 1500 B",
        ns,
        LEN,
    );
    let msgs: Vec<&[u8]> = (0..16).map(|_| &msg[..]).collect();
    let mut out = vec![[0u8; 32]; 16];
    // `$h.$f::<$l>` over the 16 messages, `$l` of them in lockstep.
    macro_rules! lanes {
        ($h:ident, $f:ident, $lib:literal, $what:literal, $($l:literal),+) => {$(
            let ns = time(|| {
                $h.$f::<$l>(black_box(&msgs), &mut out);
            }) / 16.0;
            row(
                concat!("RustCrypto ", $lib, " + linerate SHA-NI x", $l, " lockstep"),
                $what,
                ns,
                LEN,
            );
        )+};
    }
    lanes!(h1, mac_sha1_lanes, "sha1", "HMAC-SHA1 1500 B", 1, 2, 3, 4);
    let ns = time(|| {
        h1.mac_sha1_batch(black_box(&msgs), &mut out);
    }) / 16.0;
    row(
        "RustCrypto sha1 + linerate mac_sha1_batch (AVX-512 x16 where present)",
        "HMAC-SHA1 1500 B",
        ns,
        LEN,
    );
    let hk = hmac::Hmac::<sha1::Sha1>::new_from_slice(&key).unwrap();
    let ns = time(|| {
        let mut h = hk.clone();
        h.update(black_box(&msg));
        black_box(h.finalize());
    });
    row("RustCrypto hmac (cloned key)", "HMAC-SHA1 1500 B", ns, LEN);
    let rk = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &key);
    let ns = time(|| {
        black_box(ring::hmac::sign(&rk, black_box(&msg)));
    });
    row("ring hmac", "HMAC-SHA1 1500 B", ns, LEN);
    let h2 = HmacSha256::new::<Sha256Compress>(&key);
    let ns = time(|| {
        black_box(h2.mac::<Sha256Compress>(black_box(&msg)));
    });
    row(
        "RustCrypto sha2 compress, pads precomputed",
        "HMAC-SHA256 1500 B",
        ns,
        LEN,
    );
    lanes!(
        h2,
        mac_sha256_lanes,
        "sha2",
        "HMAC-SHA256 1500 B",
        1,
        2,
        3,
        4
    );
    let ns = time(|| {
        h2.mac_sha256_batch(black_box(&msgs), &mut out);
    }) / 16.0;
    row(
        "RustCrypto sha2 + linerate mac_sha256_batch",
        "HMAC-SHA256 1500 B",
        ns,
        LEN,
    );
    let rk = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let ns = time(|| {
        black_box(ring::hmac::sign(&rk, black_box(&msg)));
    });
    row("ring hmac", "HMAC-SHA256 1500 B", ns, LEN);

    // CMAC of one block, 64 at a time and one at a time.
    let c = Cmac128::new(&[0x2b; 16]).unwrap();
    let mut blocks = [[0x11u8; 16]; 64];
    let ns = time(|| {
        c.mac_blocks(black_box(&mut blocks));
    }) / 64.0;
    row(
        "linerate Cmac128::mac_blocks x 64 (VAES)",
        "AES-128-CMAC 16 B",
        ns,
        16,
    );
    let ns = time(|| {
        black_box(c.mac(black_box(&blocks[0])));
    });
    row(
        "linerate Cmac128::mac, one block",
        "AES-128-CMAC 16 B",
        ns,
        16,
    );
    let rc = cmac::Cmac::<aes::Aes128>::new_from_slice(&[0x2b; 16]).unwrap();
    let ns = time(|| {
        let mut m = rc.clone();
        m.update(black_box(&blocks[0]));
        black_box(m.finalize());
    });
    row("RustCrypto cmac (cloned key)", "AES-128-CMAC 16 B", ns, 16);
}
