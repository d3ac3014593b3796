//! Property test: random truncations and mutations of valid pcap, pcapng and gzip files
//! never panic and always terminate, within a bound on the number of results.

mod common;

use common::*;
use linerate_io::pcap::PcapReader;

/// A valid classic file with a mix of record sizes, in the given byte order and magic.
fn classic(big: bool, magic: u32, rng: &mut Rng) -> Vec<u8> {
    let o = Order(big);
    let mut f = pcap_header(o, magic, 96, 1);
    for i in 0..20 {
        let len = rng.below(120) as usize;
        let data: Vec<u8> = (0..len).map(|j| (i + j) as u8).collect();
        let mut rec = pcap_record(o, i as u32, 1000, len as u32 + 4, &data);
        if magic == 0xa1b2_cd34 {
            rec.splice(16..16, [0; 8]);
        }
        f.extend(rec);
    }
    f
}

/// A valid pcapng with two sections of opposite byte orders and every block type.
fn pcapng(rng: &mut Rng) -> Vec<u8> {
    let mut f = Vec::new();
    for big in [false, true] {
        let o = Order(big);
        f.extend(ng_shb(o));
        f.extend(ng_idb(o, 1, 64, Some(9), Some(5)));
        f.extend(ng_idb(o, 101, 0, Some(0x84), None));
        for i in 0..8u32 {
            let len = rng.below(80) as usize;
            let data = vec![i as u8; len];
            f.extend(match i % 4 {
                0 => ng_epb(o, i % 2, u64::from(i) << 20, len as u32, &data),
                1 => ng_spb(o, len as u32, &data),
                2 => ng_pb(o, (i % 2) as u16, 77, len as u32, &data),
                _ => ng_block(o, 0x4000_0000 + i, &data),
            });
        }
    }
    f
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Reads everything from `bytes`; each call returns and advances, so the number of
/// results is bounded by the size (a record or block takes at least 12 bytes).
fn exercise(bytes: Vec<u8>) {
    let len = bytes.len();
    let Ok(mut r) = PcapReader::from_vec("fuzz", bytes) else {
        return;
    };
    let bound = r.data_base().len() / 12 + 2;
    let mut results = 0;
    let mut last_pos = r.position();
    while let Some(item) = r.next_record() {
        results += 1;
        assert!(results <= bound, "no progress ({len} bytes)");
        if let Ok(rec) = item {
            assert!(rec.data.len() <= 262_144);
        }
        assert!(r.position() > last_pos || r.position() == r.data_base().len() as u64);
        last_pos = r.position();
    }
    assert!(r.next_record().is_none());
    let s = r.stats();
    assert!(s.truncated + s.corrupt <= 1);
}

#[test]
fn truncation_and_mutation_never_panic_and_terminate() {
    let mut rng = Rng(0x5eed);
    for round in 0..3000u64 {
        let mut base = match round % 7 {
            0 => classic(false, 0xa1b2_c3d4, &mut rng),
            1 => classic(true, 0xa1b2_3c4d, &mut rng),
            2 => classic(rng.below(2) == 1, 0xa1b2_cd34, &mut rng),
            3..=5 => pcapng(&mut rng),
            _ => gzip(&classic(false, 0xa1b2_c3d4, &mut rng)),
        };
        // Sanity: the unmutated file reads without error.
        if round < 7 {
            let (_, err, _) = read_all(&mut PcapReader::from_vec("ok", base.clone()).unwrap());
            assert_eq!(err, None, "round {round}");
        }
        let mutations = rng.below(6);
        for _ in 0..mutations {
            let at = rng.below(base.len() as u64) as usize;
            match rng.below(4) {
                0 => base[at] = rng.next() as u8,
                1 => base[at] ^= 1 << rng.below(8),
                // Length words are the interesting targets: make one huge or tiny.
                2 => {
                    let at = at & !3;
                    if at + 4 <= base.len() {
                        let v = [0xffff_fff0u32, 0, 12, 0x0004_0001][rng.below(4) as usize];
                        base[at..at + 4].copy_from_slice(&v.to_le_bytes());
                    }
                }
                _ => {
                    base.remove(at);
                }
            }
        }
        if rng.below(2) == 0 {
            let keep = rng.below(base.len() as u64 + 1) as usize;
            base.truncate(keep);
        }
        exercise(base);
    }
}
