//! pcapng reading: literal files in both byte orders, a multi-section file written by the
//! test with known content, and the malformed-block rules.

mod common;

use common::*;
use linerate_io::pcap::{LinkType, PcapError, PcapReader, RecordError, MAX_CAPLEN};

/// Little-endian: SHB, IDB (Ethernet, snaplen 262144, default microseconds), one EPB of
/// 4 bytes (60 on the wire) at 1,000,002 us.
const LE_NG: &[u8] = &[
    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, 0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0x00, 0x00, 0x00, //
    0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
    0x14, 0x00, 0x00, 0x00, //
    0x06, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x42, 0x42, 0x0f, 0x00, 0x04, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef,
    0x24, 0x00, 0x00, 0x00,
];

/// The same file in big-endian order.
const BE_NG: &[u8] = &[
    0x0a, 0x0d, 0x0d, 0x0a, 0x00, 0x00, 0x00, 0x1c, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x01, 0x00, 0x00,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x1c, //
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x14, //
    0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x0f, 0x42, 0x42, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x3c, 0xde, 0xad, 0xbe, 0xef,
    0x00, 0x00, 0x00, 0x24,
];

#[test]
fn literal_files_both_byte_orders() {
    for bytes in [LE_NG, BE_NG] {
        let f = TempPath::with_bytes(".pcapng", bytes);
        let mut r = PcapReader::open(&f.0).unwrap();
        assert!(r.is_pcapng());
        assert!(r.is_mapped());
        assert!(!r.is_nanosecond());
        assert_eq!(r.link_type(), LinkType::ETHERNET);
        assert_eq!(r.snaplen(), 262_144);
        assert_eq!(r.position(), 0);
        let (recs, err, stats) = read_all(&mut r);
        assert_eq!(err, None);
        assert_eq!(
            recs,
            vec![Rec {
                ts_ns: 1_000_002_000,
                orig_len: 60,
                data: vec![0xde, 0xad, 0xbe, 0xef],
                link: 1
            }]
        );
        assert_eq!(stats.records, 1);
        assert_eq!(r.position(), bytes.len() as u64);
    }
}

/// Two sections of opposite byte orders, four interfaces with different link types and
/// timestamp units, every packet block type, and skipped blocks.
fn multi_section() -> (Vec<u8>, Vec<Rec>) {
    let le = Order(false);
    let be = Order(true);
    let mut f = ng_shb(le);
    f.extend(ng_idb(le, 1, 0, Some(9), None)); // Ethernet, ns
    f.extend(ng_idb(le, 113, 64, Some(3), Some(10))); // SLL, ms, +10 s
    f.extend(ng_block(le, 5, &[0; 20])); // interface statistics: skipped
    f.extend(ng_epb(le, 0, 1_234_567_890_123, 100, b"eth"));
    f.extend(ng_epb(le, 1, 2_500, 64, b"sll-"));
    f.extend(ng_spb(le, 5, b"simple"));
    f.extend(ng_shb(be));
    f.extend(ng_idb(be, 101, 0, Some(0x8a), None)); // raw IP, 2^-10 s
    f.extend(ng_idb(be, 276, 0, None, Some(-2))); // SLL2, us, -2 s
    f.extend(ng_block(be, 0x0000_0bad, &[1, 2, 3])); // custom: skipped
    f.extend(ng_epb(be, 0, 3 * 1024 + 512, 20, b"\x45raw"));
    f.extend(ng_pb(be, 1, 5_000_001, 9, b"old"));
    f.extend(ng_epb(be, 1, 1_000_000, 8, b"early")); // 1 s - 2 s: clamps to 0
    let expect = vec![
        Rec {
            ts_ns: 1_234_567_890_123,
            orig_len: 100,
            data: b"eth".to_vec(),
            link: 1,
        },
        Rec {
            ts_ns: 12_500_000_000,
            orig_len: 64,
            data: b"sll-".to_vec(),
            link: 113,
        },
        Rec {
            ts_ns: 0,
            orig_len: 5,
            data: b"simpl".to_vec(), // min(orig_len, block room)
            link: 1,
        },
        Rec {
            ts_ns: 3_500_000_000,
            orig_len: 20,
            data: b"\x45raw".to_vec(),
            link: 101,
        },
        Rec {
            ts_ns: 3_000_001_000,
            orig_len: 9,
            data: b"old".to_vec(),
            link: 276,
        },
        Rec {
            ts_ns: 0,
            orig_len: 8,
            data: b"early".to_vec(),
            link: 276,
        },
    ];
    (f, expect)
}

#[test]
fn multi_section_file_written_by_the_test() {
    let (bytes, expect) = multi_section();
    let f = TempPath::with_bytes(".pcapng", &bytes);
    let mut r = PcapReader::open(&f.0).unwrap();
    assert!(r.is_nanosecond()); // first interface: 10^-9
    assert_eq!(r.link_type(), LinkType::ETHERNET);
    assert_eq!(r.snaplen(), 0);
    let (recs, err, stats) = read_all(&mut r);
    assert_eq!(err, None);
    assert_eq!(recs, expect);
    assert_eq!(stats.records, 6);
    assert_eq!(stats.skipped_blocks, 2);
}

#[test]
fn resolutions_and_offsets() {
    // (tsresol, units, expected ns)
    let cases: [(Option<u8>, u64, u64); 7] = [
        (None, 7, 7_000),
        (Some(0), 7, 7_000_000_000),
        (Some(6), 7, 7_000),
        (Some(12), 7_000_000, 7_000),
        (Some(0x80), 3, 3_000_000_000),
        (Some(0x80 | 30), 1 << 30, 1_000_000_000),
        (Some(0x80 | 127), u64::MAX, 0),
    ];
    for (resol, units, ns) in cases {
        let o = Order(false);
        let mut f = ng_shb(o);
        f.extend(ng_idb(o, 1, 0, resol, Some(1)));
        f.extend(ng_epb(o, 0, units, 1, b"x"));
        let (recs, err, _) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
        assert_eq!(err, None);
        assert_eq!(recs[0].ts_ns, ns + 1_000_000_000, "tsresol {resol:?}");
    }
}

#[test]
fn snaplen_caplen_and_empty_rules() {
    let o = Order(false);
    let mut f = ng_shb(o);
    f.extend(ng_idb(o, 1, 4, None, None));
    f.extend(ng_epb(o, 0, 1, 10, b"123456")); // over the snaplen
    f.extend(ng_epb(o, 0, 2, 2, b"abc")); // caplen over orig_len
    f.extend(ng_epb(o, 0, 3, 60, b"")); // empty
    f.extend(ng_spb(o, 100, b"0123456789ab")); // SPB cut to the snaplen
    let (recs, err, stats) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
    assert_eq!(err, None);
    let data: Vec<&[u8]> = recs.iter().map(|r| &r.data[..]).collect();
    assert_eq!(data, [&b"123456"[..], b"ab", b"", b"0123"]);
    assert_eq!(stats.over_snaplen, 1);
    assert_eq!(stats.caplen_over_len, 1);
    assert_eq!(stats.empty, 1);
}

fn expect_open_error(bytes: Vec<u8>, reason: &str) {
    match PcapReader::from_vec("bad.pcapng", bytes) {
        Err(e @ PcapError::BadPcapng { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("bad.pcapng: bad pcapng file at byte"),
                "{msg}"
            );
            assert!(msg.contains(reason), "{msg}");
        }
        other => panic!("expected BadPcapng({reason}), got {other:?}"),
    }
}

#[test]
fn open_errors() {
    let o = Order(false);
    expect_open_error(ng_shb(o), "no interface description block");
    let mut f = ng_shb(o);
    f.extend(ng_epb(o, 0, 0, 1, b"x"));
    expect_open_error(f, "packet block before any interface description block");
    let mut f = LE_NG.to_vec();
    f[8] = 0x99;
    expect_open_error(f, "bad byte-order magic");
    let mut f = LE_NG.to_vec();
    f[4] = 0x1d; // SHB length not a multiple of 4
    expect_open_error(f, "not a multiple of 4");
    // An IDB cut short before the file's end.
    expect_open_error(LE_NG[..40].to_vec(), "truncated block");
    // Shorter than a section header block.
    assert!(matches!(
        PcapReader::from_vec("t", LE_NG[..20].to_vec()),
        Err(PcapError::TruncatedHeader {
            needed: 28,
            found: 20,
            ..
        })
    ));
}

/// The literal file with its EPB (at byte 48) replaced by `epb`.
fn with_block(epb: &[u8]) -> Vec<u8> {
    let mut f = LE_NG[..48].to_vec();
    f.extend_from_slice(epb);
    f
}

fn expect_record_error(bytes: Vec<u8>, expected: RecordError) {
    let mut r = PcapReader::from_vec("t", bytes).unwrap();
    let (recs, err, stats) = read_all(&mut r);
    assert!(recs.is_empty());
    assert_eq!(err, Some(expected));
    assert_eq!(stats.corrupt + stats.truncated, 1);
}

#[test]
fn block_length_mismatches() {
    let good = ng_epb(Order(false), 0, 0, 3, b"abc");
    let bad = |reason| RecordError::BadBlock { offset: 48, reason };

    let mut trailing = good.clone();
    let n = trailing.len();
    trailing[n - 4] = 0x40;
    expect_record_error(
        with_block(&trailing),
        bad("block length differs from its trailing copy"),
    );

    let mut odd = good.clone();
    odd[4] = 0x21;
    expect_record_error(
        with_block(&odd),
        bad("block length under 12 or not a multiple of 4"),
    );

    let mut tiny = good.clone();
    tiny[4] = 8;
    expect_record_error(
        with_block(&tiny),
        bad("block length under 12 or not a multiple of 4"),
    );

    let mut huge = good.clone();
    huge[4..8].copy_from_slice(&0x1000u32.to_le_bytes());
    expect_record_error(
        with_block(&huge),
        RecordError::Truncated {
            offset: 48,
            needed: 0x1000,
            available: good.len() as u64,
        },
    );

    expect_record_error(
        with_block(&good[..good.len() - 1]),
        RecordError::Truncated {
            offset: 48,
            needed: good.len() as u64,
            available: good.len() as u64 - 1,
        },
    );
    expect_record_error(
        with_block(&good[..5]),
        RecordError::Truncated {
            offset: 48,
            needed: 12,
            available: 5,
        },
    );
}

#[test]
fn bad_packet_blocks() {
    let o = Order(false);
    let bad = |reason| RecordError::BadBlock { offset: 48, reason };
    expect_record_error(
        with_block(&ng_epb(o, 3, 0, 3, b"abc")),
        bad("unknown interface id"),
    );
    // caplen says 100 but the block holds 4 bytes.
    let mut over = ng_epb(o, 0, 0, 100, b"abcd");
    over[20..24].copy_from_slice(&100u32.to_le_bytes());
    expect_record_error(with_block(&over), bad("packet data overruns its block"));
    expect_record_error(
        with_block(&ng_block(o, 6, &[0; 12])),
        bad("packet block too short"),
    );
    let big = vec![0u8; MAX_CAPLEN as usize + 1];
    expect_record_error(
        with_block(&ng_epb(o, 0, 0, MAX_CAPLEN + 1, &big)),
        RecordError::CaplenTooLarge {
            offset: 48,
            caplen: MAX_CAPLEN + 1,
        },
    );
    // A second section whose interfaces are not yet described.
    let mut f = LE_NG.to_vec();
    f.extend(ng_shb(Order(true)));
    f.extend(ng_spb(Order(true), 1, b"x"));
    let mut r = PcapReader::from_vec("t", f).unwrap();
    let (recs, err, _) = read_all(&mut r);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        err,
        Some(RecordError::BadBlock {
            offset: LE_NG.len() as u64 + 28,
            reason: "unknown interface id"
        })
    );
}

#[test]
fn records_before_a_bad_block_are_delivered() {
    let (mut bytes, expect) = multi_section();
    let cut = bytes.len() - 3;
    bytes.truncate(cut);
    let (recs, err, stats) = read_all(&mut PcapReader::from_vec("t", bytes).unwrap());
    assert_eq!(recs, expect[..5]);
    assert!(matches!(err, Some(RecordError::Truncated { .. })));
    assert_eq!(stats.truncated, 1);
}
