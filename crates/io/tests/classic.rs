//! Classic pcap reading: literal files of each magic and byte order, and every bad-input
//! rule of the module documentation.

mod common;

use common::*;
use linerate_io::pcap::{LinkKind, LinkType, PcapError, PcapReader, RecordError, MAX_CAPLEN};

/// Little-endian, microseconds, snaplen 65535, Ethernet; one 4-byte record of a 60-byte
/// packet at 1 s + 2 us, one 2-byte record at 0x01020304 s + 999999 us.
const LE_USEC: &[u8] = &[
    0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, //
    0xff, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, //
    0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x00,
    0xde, 0xad, 0xbe, 0xef, //
    0x04, 0x03, 0x02, 0x01, 0x3f, 0x42, 0x0f, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0xca, 0xfe,
];

/// The same file in big-endian order.
const BE_USEC: &[u8] = &[
    0xa1, 0xb2, 0xc3, 0xd4, 0x00, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, //
    0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, //
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x3c,
    0xde, 0xad, 0xbe, 0xef, //
    0x01, 0x02, 0x03, 0x04, 0x00, 0x0f, 0x42, 0x3f, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02,
    0xca, 0xfe,
];

/// Little-endian, nanoseconds, raw IP (101): one record at 5 s + 123456789 ns.
const LE_NSEC: &[u8] = &[
    0x4d, 0x3c, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, //
    0x00, 0x00, 0x04, 0x00, 0x65, 0x00, 0x00, 0x00, //
    0x05, 0x00, 0x00, 0x00, 0x15, 0xcd, 0x5b, 0x07, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x45,
];

/// Big-endian, nanoseconds, IPv6 (229): the same record.
const BE_NSEC: &[u8] = &[
    0xa1, 0xb2, 0x3c, 0x4d, 0x00, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, //
    0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe5, //
    0x00, 0x00, 0x00, 0x05, 0x07, 0x5b, 0xcd, 0x15, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x60,
];

fn usec_expectation() -> Vec<Rec> {
    vec![
        Rec {
            ts_ns: 1_000_002_000,
            orig_len: 60,
            data: vec![0xde, 0xad, 0xbe, 0xef],
            link: 1,
        },
        Rec {
            ts_ns: 0x0102_0304 * 1_000_000_000 + 999_999_000,
            orig_len: 2,
            data: vec![0xca, 0xfe],
            link: 1,
        },
    ]
}

#[test]
fn microsecond_both_byte_orders_from_mapped_files() {
    for bytes in [LE_USEC, BE_USEC] {
        let f = TempPath::with_bytes(".pcap", bytes);
        let mut r = PcapReader::open(&f.0).unwrap();
        assert!(r.is_mapped());
        assert!(!r.is_pcapng());
        assert!(!r.is_nanosecond());
        assert_eq!(r.link_type(), LinkType::ETHERNET);
        assert_eq!(r.link_type().kind(), LinkKind::Ethernet);
        assert_eq!(r.snaplen(), 65535);
        assert_eq!(r.position(), 24);
        assert_eq!(r.data_base(), bytes);
        let first = r.next_record().unwrap().unwrap();
        // Zero-copy: the record points into data_base.
        assert_eq!(first.data.as_ptr(), r.data_base()[40..].as_ptr());
        assert_eq!(r.position(), 44);
        let (recs, err, stats) = read_all(&mut r);
        assert_eq!(err, None);
        assert_eq!(recs, usec_expectation()[1..]);
        assert_eq!(stats.records, 2);
        assert_eq!(r.position(), bytes.len() as u64);
    }
}

#[test]
fn nanosecond_both_byte_orders() {
    for (bytes, link, kind, data) in [
        (LE_NSEC, 101, LinkKind::RawIp, 0x45),
        (BE_NSEC, 229, LinkKind::Ipv6, 0x60),
    ] {
        let mut r = PcapReader::from_vec("mem", bytes.to_vec()).unwrap();
        assert!(r.is_nanosecond());
        assert!(!r.is_mapped());
        assert_eq!(r.snaplen(), 262_144);
        assert_eq!(r.link_type().kind(), kind);
        let (recs, err, _) = read_all(&mut r);
        assert_eq!(err, None);
        assert_eq!(
            recs,
            vec![Rec {
                ts_ns: 5_123_456_789,
                orig_len: 1,
                data: vec![data],
                link,
            }]
        );
    }
}

#[test]
fn link_type_classification() {
    let cases = [
        (1, LinkKind::Ethernet),
        (12, LinkKind::RawIp),
        (14, LinkKind::RawIp),
        (101, LinkKind::RawIp),
        (113, LinkKind::LinuxSll),
        (228, LinkKind::Ipv4),
        (229, LinkKind::Ipv6),
        (276, LinkKind::LinuxSll2),
        (105, LinkKind::Other),
    ];
    for (code, kind) in cases {
        assert_eq!(LinkType(code).kind(), kind, "link type {code}");
        // The number is kept as found, FCS bits of the header word masked off.
        let mut f = pcap_header(Order(false), 0xa1b2_c3d4, 100, code | 0x1000_0000);
        f.extend(pcap_record(Order(false), 0, 0, 1, &[7]));
        let mut r = PcapReader::from_vec("t", f).unwrap();
        assert_eq!(r.link_type(), LinkType(code));
        assert_eq!(r.next_record().unwrap().unwrap().link_type, LinkType(code));
    }
}

#[test]
fn modified_pcap_has_24_byte_record_headers() {
    for big in [false, true] {
        let o = Order(big);
        let mut f = pcap_header(o, 0xa1b2_cd34, 1500, 1);
        for (i, data) in [&b"abc"[..], &b"defgh"[..]].into_iter().enumerate() {
            let mut rec = pcap_record(o, 10 + i as u32, 7, 64, data);
            // ifindex, protocol, pkt_type and padding between header and data.
            rec.splice(16..16, [0xee; 8]);
            f.extend(rec);
        }
        let (recs, err, _) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
        assert_eq!(err, None);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].data, b"abc");
        assert_eq!(recs[1].data, b"defgh");
        assert_eq!(recs[1].ts_ns, 11_000_007_000);
    }
}

#[test]
fn bad_magic_names_file_and_bytes() {
    let f = TempPath::with_bytes(".pcap", b"GIF89a and some more bytes to be long enough");
    let err = PcapReader::open(&f.0).unwrap_err();
    assert!(matches!(err, PcapError::BadMagic { magic, .. } if &magic == b"GIF8"));
    let msg = err.to_string();
    assert!(msg.contains(&f.0.display().to_string()), "{msg}");
    assert!(msg.contains("47 49 46 38"), "{msg}");
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let err = PcapReader::open("/nonexistent/dir/trace.pcap").unwrap_err();
    assert!(matches!(err, PcapError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/dir/trace.pcap: "));
}

#[test]
fn truncated_file_header() {
    for len in [0, 3, 4, 23] {
        let err = PcapReader::from_vec("short.pcap", LE_USEC[..len].to_vec()).unwrap_err();
        match err {
            PcapError::TruncatedHeader { found, needed, .. } => {
                assert_eq!((found, needed), (len as u64, 24));
            }
            other => panic!("{len}: {other}"),
        }
    }
    // Through a file too (small files are read, not mapped).
    let f = TempPath::with_bytes(".pcap", &LE_USEC[..10]);
    let msg = PcapReader::open(&f.0).unwrap_err().to_string();
    assert!(
        msg.contains("truncated file header (10 bytes, header needs 24)"),
        "{msg}"
    );
}

#[test]
fn unsupported_major_version() {
    let mut f = LE_USEC.to_vec();
    f[4] = 1;
    let err = PcapReader::from_vec("old.pcap", f).unwrap_err();
    assert!(matches!(
        err,
        PcapError::UnsupportedVersion {
            major: 1,
            minor: 4,
            ..
        }
    ));
    assert_eq!(err.to_string(), "old.pcap: unsupported pcap version 1.4");
}

#[test]
fn header_only_file_has_no_records() {
    let mut r = PcapReader::from_vec("t", LE_USEC[..24].to_vec()).unwrap();
    let (recs, err, stats) = read_all(&mut r);
    assert!(recs.is_empty() && err.is_none());
    assert_eq!(stats.truncated, 0);
}

#[test]
fn truncated_last_record_delivers_the_ones_before() {
    // Cut inside the second record's header, then inside its data.
    for (cut, needed) in [(50, 16), (60, 18)] {
        let mut r = PcapReader::from_vec("t", LE_USEC[..cut].to_vec()).unwrap();
        let (recs, err, stats) = read_all(&mut r);
        assert_eq!(recs, usec_expectation()[..1]);
        assert_eq!(
            err,
            Some(RecordError::Truncated {
                offset: 44,
                needed,
                available: cut as u64 - 44,
            })
        );
        assert_eq!(stats.truncated, 1);
        assert_eq!(stats.records, 1);
        assert_eq!(r.position(), cut as u64);
    }
}

#[test]
fn oversnap_records_are_delivered_and_counted() {
    let o = Order(false);
    let mut f = pcap_header(o, 0xa1b2_c3d4, 4, 1);
    f.extend(pcap_record(o, 1, 0, 10, &[1, 2, 3, 4]));
    f.extend(pcap_record(o, 2, 0, 10, &[1, 2, 3, 4, 5, 6]));
    f.extend(pcap_record(o, 3, 0, 10, &[1, 2]));
    let (recs, err, stats) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
    assert_eq!(err, None);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1].data, [1, 2, 3, 4, 5, 6]);
    assert_eq!(stats.over_snaplen, 1);
    assert_eq!(stats.records, 3);
}

#[test]
fn snaplen_zero_means_no_limit() {
    let o = Order(false);
    let mut f = pcap_header(o, 0xa1b2_c3d4, 0, 1);
    f.extend(pcap_record(o, 1, 0, 3000, &[9; 3000]));
    let (recs, err, stats) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
    assert_eq!((recs.len(), err, stats.over_snaplen), (1, None, 0));
}

#[test]
fn zero_length_records_are_delivered_empty_and_counted() {
    let o = Order(true);
    let mut f = pcap_header(o, 0xa1b2_c3d4, 100, 1);
    f.extend(pcap_record(o, 1, 0, 0, &[]));
    f.extend(pcap_record(o, 2, 0, 60, &[]));
    f.extend(pcap_record(o, 3, 0, 1, &[0xab]));
    let (recs, err, stats) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
    assert_eq!(err, None);
    assert_eq!(recs.len(), 3);
    assert!(recs[0].data.is_empty() && recs[1].data.is_empty());
    assert_eq!(recs[1].orig_len, 60);
    assert_eq!(recs[2].data, [0xab]);
    assert_eq!(stats.empty, 2);
}

#[test]
fn caplen_over_256k_stops_as_corrupt() {
    let o = Order(false);
    let mut f = pcap_header(o, 0xa1b2_c3d4, 0, 1);
    f.extend(pcap_record(o, 1, 0, 3, &[1, 2, 3]));
    let bad_at = f.len() as u64;
    let mut bad = pcap_record(o, 2, 0, MAX_CAPLEN + 1, &[]);
    bad[8..12].copy_from_slice(&(MAX_CAPLEN + 1).to_le_bytes());
    f.extend(bad);
    f.extend(vec![0; 300_000]);
    // A caplen of exactly MAX_CAPLEN is still fine.
    let mut ok = pcap_header(o, 0xa1b2_c3d4, 0, 1);
    ok.extend(pcap_record(
        o,
        1,
        0,
        MAX_CAPLEN,
        &vec![5; MAX_CAPLEN as usize],
    ));
    let (recs, err, _) = read_all(&mut PcapReader::from_vec("ok", ok).unwrap());
    assert_eq!((recs.len(), err), (1, None));

    let mut r = PcapReader::from_vec("t", f).unwrap();
    let (recs, err, stats) = read_all(&mut r);
    assert_eq!(recs.len(), 1);
    let err = err.unwrap();
    assert_eq!(
        err,
        RecordError::CaplenTooLarge {
            offset: bad_at,
            caplen: MAX_CAPLEN + 1
        }
    );
    assert_eq!(err.offset(), bad_at);
    assert!(err.to_string().contains("file is corrupt"));
    assert_eq!(stats.corrupt, 1);
}

#[test]
fn caplen_over_orig_len_is_clamped_like_click() {
    let o = Order(false);
    let mut f = pcap_header(o, 0xa1b2_c3d4, 100, 1);
    f.extend(pcap_record(o, 1, 0, 3, &[1, 2, 3, 4, 5]));
    f.extend(pcap_record(o, 2, 0, 2, &[6, 7]));
    let (recs, err, stats) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
    assert_eq!(err, None);
    // Data cut to the original length; the surplus is skipped, the next record intact.
    assert_eq!(recs[0].data, [1, 2, 3]);
    assert_eq!(recs[0].orig_len, 3);
    assert_eq!(recs[1].data, [6, 7]);
    assert_eq!(stats.caplen_over_len, 1);
}

/// `read_fast` hands out runs of ordinary records and stops, without consuming it, at
/// the first record the general path must see; `next_record` then reads that one and
/// `read_fast` goes on after it. Together they read what `next_record` alone reads.
#[test]
fn read_fast_stops_at_unusual_records_and_resumes_after_them() {
    for big in [false, true] {
        let o = Order(big);
        let mut f = pcap_header(o, 0xa1b2_3c4d, 8, 1);
        f.extend(pcap_record(o, 1, 5, 4, &[1, 2, 3, 4]));
        f.extend(pcap_record(o, 2, 6, 60, &[5, 6]));
        f.extend(pcap_record(o, 3, 0, 0, &[])); // empty: general path
        f.extend(pcap_record(o, 4, 7, 9, &[7; 9])); // over the snaplen: general path (counted, kept whole)
        f.extend(pcap_record(o, 5, 8, 1, &[8]));
        f.extend(&o.u32(6)[..3]); // a truncated record header
        let mut r = PcapReader::from_vec("t", f.clone()).unwrap();
        let mut got: Vec<(Vec<u8>, u64, u32)> = Vec::new();
        let take = |r: &mut PcapReader, max| {
            let mut seen = Vec::new();
            let n = r.read_fast(max, |d, ts, orig| {
                seen.push((d.to_vec(), ts, orig));
                true
            });
            assert_eq!(n, seen.len());
            seen
        };
        got.extend(take(&mut r, 1)); // `max` is respected
        got.extend(take(&mut r, 64));
        assert_eq!(
            got.len(),
            2,
            "stops before the empty record (big-endian {big})"
        );
        assert!(
            take(&mut r, 64).is_empty(),
            "the empty record is not consumed"
        );
        let empty = r.next_record().unwrap().unwrap();
        assert!(empty.data.is_empty());
        assert!(take(&mut r, 64).is_empty(), "the oversnap record is next");
        let over = r.next_record().unwrap().unwrap();
        assert_eq!((over.data.len(), over.orig_len), (9, 9));
        // A callback that refuses leaves the record for the next call.
        assert_eq!(r.read_fast(64, |_, _, _| false), 0);
        got.extend(take(&mut r, 64));
        assert_eq!(
            got,
            [
                (vec![1, 2, 3, 4], 1_000_000_005, 4),
                (vec![5, 6], 2_000_000_006, 60),
                (vec![8], 5_000_000_008, 1),
            ]
        );
        assert!(matches!(
            r.next_record(),
            Some(Err(RecordError::Truncated { .. }))
        ));
        assert_eq!(r.read_fast(64, |_, _, _| true), 0);
        // The same records, counted the same way, as `next_record` alone reads them.
        let (all, _, stats) = read_all(&mut PcapReader::from_vec("t", f).unwrap());
        assert_eq!(all.len(), 5);
        assert_eq!(r.stats(), &stats);
    }
}

/// pcapng files never take the classic fast path.
#[test]
fn read_fast_reads_nothing_from_pcapng() {
    let o = Order(false);
    let mut shb = Vec::new();
    shb.extend(o.u32(0x1a2b_3c4d));
    shb.extend(o.u16(1));
    shb.extend(o.u16(0));
    shb.extend(o.i64(-1));
    let mut idb = Vec::new();
    idb.extend(o.u16(1));
    idb.extend(o.u16(0));
    idb.extend(o.u32(0));
    let mut f = ng_block(o, 0x0a0d_0d0a, &shb);
    f.extend(ng_block(o, 1, &idb));
    let mut r = PcapReader::from_vec("t", f).unwrap();
    assert!(r.is_pcapng());
    assert_eq!(r.read_fast(64, |_, _, _| true), 0);
}

/// Resident kilobytes of this process's mapping that starts at `addr`.
#[cfg(target_os = "linux")]
fn mapping_rss_kb(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut lines = smaps.lines();
    while let Some(l) = lines.next() {
        let start = l
            .split('-')
            .next()
            .and_then(|s| usize::from_str_radix(s, 16).ok());
        if start == Some(addr) {
            let rss = lines.find(|l| l.starts_with("Rss:")).unwrap();
            return rss.split_whitespace().nth(1).unwrap().parse().unwrap();
        }
    }
    panic!("no mapping at {addr:#x}")
}

/// A mapped file of at least `size` bytes of 1000-byte records, record
/// `n` at second `n` and filled with `n as u8`, opened: the file, its
/// reader, its bytes and the number of records.
#[cfg(target_os = "linux")]
fn numbered_records(size: usize) -> (TempPath, PcapReader, Vec<u8>, u32) {
    let mut bytes = LE_USEC[..24].to_vec();
    let mut n = 0u32;
    while bytes.len() < size {
        bytes.extend_from_slice(&n.to_le_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        bytes.extend_from_slice(&1000u32.to_le_bytes());
        bytes.extend_from_slice(&1000u32.to_le_bytes());
        bytes.extend(std::iter::repeat_n(n as u8, 1000));
        n += 1;
    }
    let f = TempPath::with_bytes(".pcap", &bytes);
    let r = PcapReader::open(&f.0).unwrap();
    assert!(r.is_mapped());
    (f, r, bytes, n)
}

#[cfg(target_os = "linux")]
#[test]
fn released_start_of_a_mapped_file_reads_the_same() {
    let (_f, mut r, bytes, n) = numbered_records(8 << 20);
    let (recs, err, _) = read_all(&mut r);
    assert_eq!((recs.len(), err), (n as usize, None));
    let base = r.data_base().as_ptr() as usize;
    let before = mapping_rss_kb(base);
    // Past the end means all of it; 2 MiB steps, so the last partial step stays.
    r.release_before(u64::MAX);
    let after = mapping_rss_kb(base);
    assert!(after < 2048 && after < before, "{before} -> {after} kB");
    // Every byte still reads as written (faulted back in).
    assert_eq!(r.data_base(), &bytes[..]);
}

#[cfg(target_os = "linux")]
#[test]
fn fast_reader_maps_a_file_in_ahead_of_itself() {
    // More than one step of the reader's populate-ahead.
    let (_f, mut r, _, n) = numbered_records(40 << 20);
    let base = r.data_base().as_ptr() as usize;
    // One record read: the first 32 MiB are mapped in already (page faults
    // alone would have mapped a few pages around the record).
    assert_eq!(r.read_fast(1, |d, _, _| d[0] == 0), 1);
    let rss = mapping_rss_kb(base);
    assert!(rss >= 30 << 10, "{rss} kB mapped after one record");
    // The rest reads as written, across the next step.
    let mut k = 1u32;
    while r.read_fast(64, |d, ts, _| {
        assert_eq!(
            (d.len(), d[999], ts),
            (1000, k as u8, u64::from(k) * 1_000_000_000)
        );
        k += 1;
        true
    }) > 0
    {}
    assert_eq!(k, n);
}
