//! The crypto elements: published test vectors (NIST SP 800-38A F.5 for
//! CTR, RFC 4493 for CMAC, RFC 2202 and RFC 4231 for HMAC) on the public
//! primitives and through the elements, short packets, verify mode, key
//! writes, and differential property tests of `IMPL fast` against
//! `IMPL reference` on random packets and configurations.

use linerate_elements::crypto::primitives::{
    Cmac128, HmacSha1, HmacSha256, Sha1Compress, Sha256Compress,
};
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterOptions};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn run(text: &str) -> Router {
    let reg = linerate_elements::registry();
    let o = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "lib_crypto.click", &o).unwrap_or_else(|d| panic!("{d}"));
    let mut r = Router::build(&c, &reg, RouterOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    r.run();
    r
}

fn read(r: &Router, h: &str) -> String {
    r.handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"))
        .trim_end()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("linerate-lib-crypto-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)))
}

fn pcap(pkts: &[Vec<u8>]) -> PathBuf {
    let path = tmp("in.pcap");
    let mut w = PcapWriter::create(&path, LinkType::ETHERNET, 65535, false).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write(
            1_700_000_000_000_000_000 + i as u64 * 1000,
            p.len() as u32,
            p,
        )
        .unwrap();
    }
    w.flush().unwrap();
    path
}

fn records(p: &Path) -> Vec<Vec<u8>> {
    let mut r = PcapReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Runs `element` (outputs 0 and 1 to files) on `pkts`; returns the
/// router and both outputs.
fn through(element: &str, pkts: &[Vec<u8>]) -> (Router, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let (i, o0, o1) = (pcap(pkts), tmp("o0.pcap"), tmp("o1.pcap"));
    let r = run(&format!(
        "FromDump(\"{}\", STOP true) -> e :: {element} -> ToDump(\"{}\"); e[1] -> ToDump(\"{}\");",
        i.display(),
        o0.display(),
        o1.display()
    ));
    (r, records(&o0), records(&o1))
}

const SP800_PT: &str = "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
                        30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710";
const SP800_CTR: &str = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
const AES128_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const AES256_KEY: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";

#[test]
fn aesctr_sp800_38a_f5_vectors() {
    let cases = [
        (
            AES128_KEY,
            "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff
             5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee",
        ),
        (
            AES256_KEY,
            "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5
             2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6",
        ),
    ];
    for (key, ct) in cases {
        for imp in ["fast", "reference"] {
            // Packet: counter block, then the plaintext; and a short packet.
            let mut p = hex(SP800_CTR);
            p.extend(hex(SP800_PT));
            let short = vec![1u8; 15];
            let (r, out, bad) = through(
                &format!("AESCTR(KEY {key}, IV_OFFSET 0, OFFSET 16, IMPL {imp})"),
                &[p.clone(), short.clone()],
            );
            let mut want = hex(SP800_CTR);
            want.extend(hex(ct));
            assert_eq!(out, vec![want.clone()], "{key} {imp}");
            assert_eq!(bad, vec![short]);
            assert_eq!(read(&r, "e.count"), "1");
            assert_eq!(read(&r, "e.bytes"), "64");
            assert_eq!(read(&r, "e.drops"), "1");
            // Decryption is the same operation; a partial last block too.
            let part = want[..16 + 40].to_vec();
            let (_, dec, _) = through(
                &format!("AESCTR(KEY {key}, IV_OFFSET 0, OFFSET 16, IMPL {imp})"),
                &[part],
            );
            assert_eq!(&dec[0][16..], &hex(SP800_PT)[..40]);
        }
    }
}

#[test]
fn aes_blocks_match_rustcrypto_and_fips197() {
    use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
    use linerate_elements::crypto::primitives::AesKey;
    let pt = hex("00112233445566778899aabbccddeeff");
    for (klen, ct) in [
        (16u8, "69c4e0d86a7b0430d8cdb78070b4c55a"),
        (32, "8ea2b7ca516745bfeafc49904b496089"),
    ] {
        let key: Vec<u8> = (0..klen).collect();
        let k = AesKey::new(&key).unwrap();
        let mut b = [[0u8; 16]];
        b[0].copy_from_slice(&pt);
        k.encrypt_blocks(&mut b);
        assert_eq!(b[0].to_vec(), hex(ct));
        // Every count around the 16-block passes, against RustCrypto.
        for n in [0usize, 1, 2, 15, 16, 17, 31, 32, 33, 50] {
            let mut mine: Vec<[u8; 16]> = (0..n)
                .map(|i| std::array::from_fn(|j| (i * 31 + j * 7) as u8))
                .collect();
            let mut lib: Vec<Array<u8, _>> = mine.iter().map(|b| Array::from(*b)).collect();
            if klen == 16 {
                aes::Aes128::new_from_slice(&key)
                    .unwrap()
                    .encrypt_blocks(&mut lib);
            } else {
                aes::Aes256::new_from_slice(&key)
                    .unwrap()
                    .encrypt_blocks(&mut lib);
            }
            k.encrypt_blocks(&mut mine);
            let lib: Vec<[u8; 16]> = lib.iter().map(|a| (*a).into()).collect();
            assert_eq!(mine, lib, "key {klen} blocks {n}");
        }
    }
}

#[test]
fn aesctr_counter_carries_past_32_bits() {
    // The IV's low word is near its end: a 600-byte region carries into
    // the next word (SP 800-38A's 128-bit increment), as the reference does.
    let mut p = hex("000102030405060708090a0bfffffff0");
    p.extend((0..600u32).map(|i| i as u8));
    let mut outs = Vec::new();
    for imp in ["fast", "reference"] {
        let (_, out, _) = through(
            &format!("AESCTR(KEY {AES256_KEY}, IV_OFFSET 0, OFFSET 16, IMPL {imp})"),
            &[p.clone()],
        );
        outs.push(out);
    }
    assert_eq!(outs[0], outs[1]);
    // Block 16 (counter ...0c00000000) equals AES of that block.
    let aes = linerate_elements::crypto::primitives::AesKey::new(&hex(AES256_KEY)).unwrap();
    let mut cb = [0u8; 16];
    cb[..12].copy_from_slice(&hex("000102030405060708090a0c"));
    aes.encrypt_block(&mut cb);
    let got: Vec<u8> = outs[0][0][16 + 256..16 + 272]
        .iter()
        .zip(&p[16 + 256..16 + 272])
        .map(|(a, b)| a ^ b)
        .collect();
    assert_eq!(got, cb.to_vec());
}

#[test]
fn aesctr_nonce_mode_counter_layout() {
    // Counter block j of packet n is NONCE | n (BE32) | j+1 (BE32): check
    // the first packet's first block against AES directly.
    let key = hex(AES128_KEY);
    let nonce = "0011223344556677";
    let (r, out, _) = through(
        &format!("AESCTR(KEY {AES128_KEY}, NONCE {nonce}, OFFSET 4, LENGTH 16)"),
        &[vec![0u8; 24], vec![0u8; 24]],
    );
    let aes = linerate_elements::crypto::primitives::AesKey::new(&key).unwrap();
    for (n, p) in out.iter().enumerate() {
        let mut cb = [0u8; 16];
        cb[..8].copy_from_slice(&hex(nonce));
        cb[11] = n as u8;
        cb[15] = 1;
        aes.encrypt_block(&mut cb);
        assert_eq!(&p[4..20], &cb, "packet {n}");
        assert_eq!(&p[20..], &[0u8; 4], "outside the region");
    }
    assert_eq!(read(&r, "e.packet_number"), "2");
}

#[test]
fn aesctr_key_write_and_config_errors() {
    let mut p = hex(SP800_CTR);
    p.extend(hex(SP800_PT));
    let i = pcap(&[p]);
    let o = tmp("o.pcap");
    let reg = linerate_elements::registry();
    let opts = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let text = format!(
        "FromDump(\"{}\", STOP true) -> e :: AESCTR(KEY {}, IV_OFFSET 0, OFFSET 16) -> ToDump(\"{}\");",
        i.display(),
        "00".repeat(16),
        o.display()
    );
    let c = parse_str(&text, "t.click", &opts).unwrap();
    let mut r = Router::build(&c, &reg, RouterOptions::default()).unwrap();
    r.handle().call("e.key", Some(AES256_KEY)).unwrap();
    assert!(r.handle().call("e.key", Some("0011")).is_err());
    r.run();
    assert_eq!(
        &records(&o)[0][16..32],
        &hex("601ec313775789a5b7a7f504bbf3d228")[..]
    );
    for bad in [
        "AESCTR(KEY 00, IV_OFFSET 0)",
        "AESCTR(KEY 2b7e151628aed2a6abf7158809cf4f3c)",
        "AESCTR(KEY 2b7e151628aed2a6abf7158809cf4f3c, IV_OFFSET 0, OFFSET 8)",
        "AESCTR(KEY 2b7e151628aed2a6abf7158809cf4f3c, NONCE 0011)",
    ] {
        let c = parse_str(&format!("Idle -> {bad} -> Discard;"), "t.click", &opts).unwrap();
        assert!(
            Router::build(&c, &reg, RouterOptions::default()).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn cmac_rfc4493_vectors() {
    let c = Cmac128::new(&hex(AES128_KEY)).unwrap();
    let (k1, k2) = c.subkeys();
    assert_eq!(k1.to_vec(), hex("fbeed618357133667c85e08f7236a8de"));
    assert_eq!(k2.to_vec(), hex("f7ddac306ae266ccf90bc11ee46d513b"));
    let m = hex(SP800_PT);
    let want = [
        (0, "bb1d6929e95937287fa37d129b756746"),
        (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"),
        (64, "51f0bebf7e3b9d92fc49741779363cfe"),
    ];
    for (n, t) in want {
        assert_eq!(c.mac(&m[..n]).to_vec(), hex(t), "len {n}");
    }
    // All four together, interleaved, and the one-block batch path.
    let msgs: Vec<&[u8]> = want.iter().map(|(n, _)| &m[..*n]).collect();
    let mut out = [[0u8; 16]; 4];
    c.mac_many(&msgs, &mut out);
    for (o, (_, t)) in out.iter().zip(want) {
        assert_eq!(o.to_vec(), hex(t));
    }
    let mut blocks = [[0u8; 16]; 3];
    for b in &mut blocks {
        b.copy_from_slice(&m[..16]);
    }
    c.mac_blocks(&mut blocks);
    assert!(blocks.iter().all(|b| b.to_vec() == hex(want[1].1)));
}

#[test]
fn aescmac_element_compute_and_verify() {
    let m = hex(SP800_PT);
    for imp in ["fast", "reference"] {
        // Compute, appended: the 40-byte message gets its MAC.
        let (r, out, _) = through(
            &format!("AESCMAC(KEY {AES128_KEY}, IMPL {imp})"),
            &[m[..40].to_vec()],
        );
        let mut want = m[..40].to_vec();
        want.extend(hex("dfa66747de9ae63030ca32611497c827"));
        assert_eq!(out, vec![want]);
        assert_eq!(read(&r, "e.count"), "1");
        // SCION style: one block at 0, 6-byte MAC at 16; one good, one bad, one short.
        let mut good = m[..16].to_vec();
        good.extend(hex("070a16b46b4d"));
        let mut bad = good.clone();
        bad[20] ^= 1;
        let short = good[..21].to_vec();
        let (r, out, rej) = through(
            &format!(
                "AESCMAC(KEY {AES128_KEY}, LENGTH 16, MODE verify, MAC_OFFSET 16, MACLEN 6, IMPL {imp})"
            ),
            &[good.clone(), bad.clone(), short.clone()],
        );
        assert_eq!(out, vec![good]);
        assert_eq!(rej, vec![bad, short]);
        assert_eq!(read(&r, "e.count"), "2");
        assert_eq!(read(&r, "e.failures"), "1");
        assert_eq!(read(&r, "e.drops"), "1");
    }
}

#[test]
fn hmac_rfc2202_rfc4231_vectors() {
    let long_data = b"This is a test using a larger than block-size key and a larger than \
block-size data. The key needs to be hashed before being used by the HMAC algorithm.";
    let sha1: [(Vec<u8>, Vec<u8>, &str); 7] = [
        (
            vec![0x0b; 20],
            b"Hi There".to_vec(),
            "b617318655057264e28bc0b6fb378c8ef146be00",
        ),
        (
            b"Jefe".to_vec(),
            b"what do ya want for nothing?".to_vec(),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
        ),
        (
            vec![0xaa; 20],
            vec![0xdd; 50],
            "125d7342b9ac11cd91a39af48aa17b4f63f175d3",
        ),
        (
            (1..=25).collect(),
            vec![0xcd; 50],
            "4c9007f4026250c6bc8414f9bf50c86c2d7235da",
        ),
        (
            vec![0x0c; 20],
            b"Test With Truncation".to_vec(),
            "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04",
        ),
        (
            vec![0xaa; 80],
            b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
            "aa4ae5e15272d00e95705637ce8a3b55ed402112",
        ),
        (
            vec![0xaa; 80],
            b"Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data".to_vec(),
            "e8e99d0f45237d786d6bbaa7965c7808bbff1a91",
        ),
    ];
    for (k, d, t) in &sha1 {
        let h = HmacSha1::new::<Sha1Compress>(k);
        assert_eq!(h.mac::<Sha1Compress>(d)[..20].to_vec(), hex(t), "{t}");
    }
    let sha256: [(Vec<u8>, Vec<u8>, &str); 7] = [
        (
            vec![0x0b; 20],
            b"Hi There".to_vec(),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        ),
        (
            b"Jefe".to_vec(),
            b"what do ya want for nothing?".to_vec(),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        ),
        (
            vec![0xaa; 20],
            vec![0xdd; 50],
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
        ),
        (
            (1..=25).collect(),
            vec![0xcd; 50],
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
        ),
        (
            vec![0x0c; 20],
            b"Test With Truncation".to_vec(),
            "a3b6167473100ee06e0c796c2955552b",
        ),
        (
            vec![0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        ),
        (
            vec![0xaa; 131],
            long_data.to_vec(),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
        ),
    ];
    for (k, d, t) in &sha256 {
        let h = HmacSha256::new::<Sha256Compress>(k);
        let want = hex(t);
        assert_eq!(
            h.mac::<Sha256Compress>(d)[..want.len()].to_vec(),
            want,
            "{t}"
        );
    }
    // Several messages in lockstep (SHA-NI lanes), uneven lengths.
    let data: Vec<u8> = (0..700u32).map(|i| (i * 7) as u8).collect();
    let msgs: Vec<&[u8]> = [0, 1, 55, 56, 64, 119, 120, 300, 699, 5, 64]
        .iter()
        .map(|&n| &data[..n])
        .collect();
    let h = HmacSha1::new::<Sha1Compress>(&[0x42; 20]);
    let want: Vec<[u8; 32]> = msgs.iter().map(|m| h.mac::<Sha1Compress>(m)).collect();
    let mut out = vec![[0u8; 32]; msgs.len()];
    h.mac_sha1_lanes::<1>(&msgs, &mut out);
    assert_eq!(out, want);
    h.mac_sha1_lanes::<2>(&msgs, &mut out);
    assert_eq!(out, want);
    h.mac_sha1_lanes::<3>(&msgs, &mut out);
    assert_eq!(out, want);
    h.mac_sha1_lanes::<4>(&msgs, &mut out);
    assert_eq!(out, want);
    // The elements' batch: groups of 16 (AVX-512 lanes where the CPU has
    // them) of uneven lengths, each length's blocks ending in every lane,
    // then a remainder of 7.
    let msgs: Vec<&[u8]> = (0..39usize)
        .map(|i| &data[..(i * 37 + i * i * 11) % 700])
        .collect();
    let want: Vec<[u8; 32]> = msgs.iter().map(|m| h.mac::<Sha1Compress>(m)).collect();
    let mut out = vec![[0u8; 32]; msgs.len()];
    h.mac_sha1_batch(&msgs, &mut out);
    assert_eq!(out, want);
    // HMAC-SHA256 in lockstep: every RFC 4231 case in each lane position
    // (the cases' keys differ, so one key's lanes per pass).
    for (k, d, t) in &sha256 {
        let h = HmacSha256::new::<Sha256Compress>(k);
        let want = hex(t);
        let msgs = vec![&d[..]; 9];
        let mut out = vec![[0u8; 32]; msgs.len()];
        for lanes in 1..=4 {
            match lanes {
                1 => h.mac_sha256_lanes::<1>(&msgs, &mut out),
                2 => h.mac_sha256_lanes::<2>(&msgs, &mut out),
                3 => h.mac_sha256_lanes::<3>(&msgs, &mut out),
                _ => h.mac_sha256_batch(&msgs, &mut out),
            }
            for o in &out {
                assert_eq!(o[..want.len()].to_vec(), want, "{t} x{lanes}");
            }
        }
    }
    let h = HmacSha256::new::<Sha256Compress>(&[0x42; 20]);
    let msgs: Vec<&[u8]> = (0..39usize)
        .map(|i| &data[..(i * 37 + i * i * 11) % 700])
        .collect();
    let want: Vec<[u8; 32]> = msgs.iter().map(|m| h.mac::<Sha256Compress>(m)).collect();
    let mut out = vec![[0u8; 32]; msgs.len()];
    h.mac_sha256_lanes::<2>(&msgs, &mut out);
    assert_eq!(out, want);
    h.mac_sha256_batch(&msgs, &mut out);
    assert_eq!(out, want);
    // Through the elements: RFC 2202 case 5 as HMAC-SHA1-96, RFC 4231 case 5
    // truncated to 128 bits; then verified and stripped.
    for imp in ["fast", "reference"] {
        for (class, key, t) in [
            ("HMACSHA1", "0c".repeat(20), "4c1a03424b55e07fe7f27be1"),
            (
                "HMACSHA256",
                "0c".repeat(20),
                "a3b6167473100ee06e0c796c2955552b",
            ),
        ] {
            let ml = t.len() / 2;
            let mut p = vec![0xee; 4];
            p.extend(b"Test With Truncation");
            let (_, out, _) = through(
                &format!("{class}(KEY {key}, OFFSET 4, MACLEN {ml}, IMPL {imp})"),
                &[p.clone()],
            );
            let mut want = p.clone();
            want.extend(hex(t));
            assert_eq!(out, vec![want.clone()]);
            let mut bad = want.clone();
            bad[0] ^= 0xff; // outside the region: still good
            bad[5] ^= 1;
            let (r, out, rej) = through(
                &format!("{class}(KEY {key}, OFFSET 4, MACLEN {ml}, MODE verify, STRIP true, IMPL {imp})"),
                &[want, bad.clone()],
            );
            assert_eq!(out, vec![p]);
            assert_eq!(rej, vec![bad]);
            assert_eq!(read(&r, "e.failures"), "1");
        }
    }
}

/// Runs `cfg` with `IMPL fast` and `IMPL reference` in a chain
/// `a -> c -> v` (a: `cfg`, c: `cfg2` computing, v: `cfg2` verifying) and
/// returns every output and handler value.
fn chain(pkts: &[Vec<u8>], a: &str, c: &str, v: &str, imp: &str, hs: &[&str]) -> Vec<String> {
    let i = pcap(pkts);
    let outs: Vec<PathBuf> = (0..4).map(|k| tmp(&format!("d{k}.pcap"))).collect();
    let r = run(&format!(
        "FromDump(\"{}\", STOP true) -> a :: {a}, IMPL {imp}) -> c :: {c}, IMPL {imp}) -> v :: {v}, IMPL {imp}) -> ToDump(\"{}\");
         a[1] -> ToDump(\"{}\"); c[1] -> ToDump(\"{}\"); v[1] -> ToDump(\"{}\");",
        i.display(),
        outs[0].display(),
        outs[1].display(),
        outs[2].display(),
        outs[3].display()
    ));
    let mut v: Vec<String> = outs.iter().map(|o| format!("{:?}", records(o))).collect();
    for e in ["a", "c", "v"] {
        for h in hs {
            v.push(read(&r, &format!("{e}.{h}")));
        }
    }
    v
}

fn packets() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..80)
}

/// Packets up to 1000 bytes: regions on both sides of AESCTR's direct path.
fn big_packets() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..1000), 1..40)
}

fn region_at(o: usize, l: Option<usize>) -> String {
    match l {
        Some(l) => format!("OFFSET {o}, LENGTH {l}"),
        None => format!("OFFSET {o}"),
    }
}

fn region() -> impl Strategy<Value = String> {
    (0usize..40, prop::option::of(0usize..120)).prop_map(|(o, l)| region_at(o, l))
}

/// Each message's MAC by `mac` (a keyed RustCrypto MAC), as bytes.
fn reference_macs<M: hmac::Mac + Clone>(mac: &M, msgs: &[&[u8]]) -> Vec<Vec<u8>> {
    msgs.iter()
        .map(|m| {
            let mut x = mac.clone();
            x.update(m);
            x.finalize().into_bytes().to_vec()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The batch HMACs (HMAC-SHA1 and HMAC-SHA256 lanes) against
    /// RustCrypto's `hmac`: random keys, a batch of random lengths up to
    /// 3000 bytes (so lanes run out of blocks at different points).
    #[test]
    fn hmac_batches_equal_rustcrypto(
        key in prop::collection::vec(any::<u8>(), 0..150),
        lens in prop::collection::vec(0usize..3000, 1..24),
        seed in any::<u8>(),
    ) {
        use hmac::KeyInit;
        let data: Vec<u8> = (0..3007u32).map(|i| (i.wrapping_mul(31) as u8) ^ seed).collect();
        // Regions at varying alignments.
        let msgs: Vec<&[u8]> =
            lens.iter().enumerate().map(|(i, &n)| &data[i % 7..][..n]).collect();
        let mut out = vec![[0u8; 32]; msgs.len()];
        let h = HmacSha256::new::<Sha256Compress>(&key);
        let r = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
        let want = reference_macs(&r, &msgs);
        h.mac_sha256_batch(&msgs, &mut out);
        prop_assert_eq!(out.iter().map(|o| o.to_vec()).collect::<Vec<_>>(), want.clone());
        h.mac_sha256_lanes::<2>(&msgs, &mut out);
        prop_assert_eq!(out.iter().map(|o| o.to_vec()).collect::<Vec<_>>(), want);
        let h = HmacSha1::new::<Sha1Compress>(&key);
        let r = hmac::Hmac::<sha1::Sha1>::new_from_slice(&key).unwrap();
        let want = reference_macs(&r, &msgs);
        h.mac_sha1_batch(&msgs, &mut out);
        prop_assert_eq!(out.iter().map(|o| o[..20].to_vec()).collect::<Vec<_>>(), want);
    }

    #[test]
    fn mac_elements_fast_equals_reference(
        pkts in packets(),
        class in 0usize..3,
        key in prop::collection::vec(any::<u8>(), 1..100),
        r1 in region(),
        r2 in region(),
        maclen in 1usize..33,
        verify_first in any::<bool>(),
        mac_at in prop::option::of(0usize..60),
    ) {
        // MACLEN over each algorithm's whole range: 1-20, 1-32, 1-16.
        let (name, key, out) = match class {
            0 => ("HMACSHA1", key, 20),
            1 => ("HMACSHA256", key, 32),
            _ => ("AESCMAC", key.iter().cycle().take(if key.len() % 2 == 0 { 16 } else { 32 }).copied().collect(), 16),
        };
        let maclen = 1 + (maclen - 1) % out;
        let k: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let mode = if verify_first { "verify" } else { "compute" };
        let at = mac_at.map(|m| format!(", MAC_OFFSET {m}")).unwrap_or_default();
        let a = format!("{name}(KEY {k}, {r1}, MODE {mode}, MACLEN {maclen}{at}");
        let c = format!("{name}(KEY {k}, {r2}, MACLEN {maclen}");
        let v = format!("{name}(KEY {k}, {r2}, MACLEN {maclen}, MODE verify, STRIP true");
        let hs = ["count", "failures", "drops"];
        let fast = chain(&pkts, &a, &c, &v, "fast", &hs);
        let reference = chain(&pkts, &a, &c, &v, "reference", &hs);
        prop_assert_eq!(fast, reference);
    }

    /// AESCMAC's one-block path (`LENGTH 16` with a `MAC_OFFSET`): compute
    /// (or verify random bytes), verify the same layout, then verify another
    /// `MACLEN` (passing when it is not longer); MACs within 16 bytes of the
    /// packet's end take the byte-wise write and compare.
    #[test]
    fn aescmac_one_block_fast_equals_reference(
        pkts in packets(),
        key in prop::collection::vec(any::<u8>(), 32),
        long in any::<bool>(),
        off in 0usize..40,
        at in 0usize..80,
        maclen in 1usize..17,
        maclen2 in 1usize..17,
        verify_first in any::<bool>(),
    ) {
        let k: String = key[..if long { 32 } else { 16 }].iter().map(|b| format!("{b:02x}")).collect();
        let mode = if verify_first { "verify" } else { "compute" };
        let base = format!("AESCMAC(KEY {k}, OFFSET {off}, LENGTH 16, MAC_OFFSET {at}");
        let a = format!("{base}, MODE {mode}, MACLEN {maclen}");
        let c = format!("{base}, MODE verify, MACLEN {maclen}");
        let v = format!("{base}, MODE verify, MACLEN {maclen2}");
        let hs = ["count", "failures", "drops"];
        let fast = chain(&pkts, &a, &c, &v, "fast", &hs);
        let reference = chain(&pkts, &a, &c, &v, "reference", &hs);
        prop_assert_eq!(fast, reference);
    }

    #[test]
    fn aesctr_fast_equals_reference(
        pkts in big_packets(),
        long in any::<bool>(),
        key in prop::collection::vec(any::<u8>(), 32),
        off in 0usize..40,
        len in prop::option::of(0usize..700),
        nonce in prop::option::of(any::<[u8; 8]>()),
        iv_at in 0usize..8,
    ) {
        let key = &key[..if long { 32 } else { 16 }];
        let k: String = key.iter().map(|b| format!("{b:02x}")).collect();
        // The IV field lies in front of the region (OFFSET is moved past it).
        let iv = match nonce {
            Some(n) => format!("NONCE {}", n.iter().map(|b| format!("{b:02x}")).collect::<String>()),
            None => format!("IV_OFFSET {iv_at}"),
        };
        let r = region_at(if nonce.is_none() { iv_at + 16 + off } else { off }, len);
        let cfg = |imp: &str| format!("AESCTR(KEY {k}, {iv}, {r}, IMPL {imp})");
        let hs = ["count", "bytes", "drops", "packet_number"];
        let mut out = Vec::new();
        for imp in ["fast", "reference"] {
            let (rt, o0, o1) = through(&cfg(imp), &pkts);
            let mut v = vec![format!("{o0:?}"), format!("{o1:?}")];
            for h in hs {
                v.push(read(&rt, &format!("e.{h}")));
            }
            out.push(v);
        }
        prop_assert_eq!(&out[0], &out[1]);
    }
}
