//! CuckooHash and FlowCache on literal packets (exact outputs, annotations
//! and handler values), and differential tests: random tables, traffic and
//! configurations through `IMPL fast` and `IMPL reference` give identical
//! outputs, annotations and handler values.

mod common;

use linerate_io::pcap::{LinkType, PcapWriter};
use linerate_runtime::{Router, RouterOptions};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn tmp(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    // This process's directory, emptied when first used: process ids are
    // reused, and `outcome` reads an output file if one exists, so a file
    // an earlier process with the same id left made a test fail.
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let d = DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("linerate-tables-hash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    });
    d.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)))
}

/// A raw-IP pcap of `(timestamp ns, packet)`.
fn pcap(pkts: &[(u64, Vec<u8>)]) -> PathBuf {
    pcap_of(LinkType::RAW_DLT12, pkts)
}

/// A pcap of link type `link` of `(timestamp ns, packet)`.
fn pcap_of(link: LinkType, pkts: &[(u64, Vec<u8>)]) -> PathBuf {
    let path = tmp("in.pcap");
    let mut w = PcapWriter::create(&path, link, 0, true).unwrap();
    for (ts, p) in pkts {
        w.write(*ts, p.len() as u32, p).unwrap();
    }
    w.flush().unwrap();
    path
}

fn file(text: &str) -> PathBuf {
    let p = tmp("table.txt");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(text: &str) -> Router {
    common::run(text, RouterOptions::default())
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim_end().to_string()
}

fn write(r: &Router, h: &str, v: &str) -> Result<(), String> {
    r.handle().call(h, Some(v)).map(drop)
}

/// Lines of a summary dump without the `!` header lines.
fn summary(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('!'))
        .map(str::to_string)
        .collect()
}

/// An IPv4 packet `a:sp > b:dp` of protocol `proto` (TCP with `flags`).
fn v4(a: [u8; 4], sp: u16, b: [u8; 4], dp: u16, proto: u8, flags: u8) -> Vec<u8> {
    let l4_len = if proto == 6 { 20 } else { 8 };
    let mut p = vec![0u8; 20 + l4_len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
    p[8] = 64;
    p[9] = proto;
    p[12..16].copy_from_slice(&a);
    p[16..20].copy_from_slice(&b);
    p[20..22].copy_from_slice(&sp.to_be_bytes());
    p[22..24].copy_from_slice(&dp.to_be_bytes());
    if proto == 6 {
        p[32] = 0x50;
        p[33] = flags;
    }
    p
}

/// An IPv6/UDP packet.
fn v6(a: u8, b: u8) -> Vec<u8> {
    let mut p = vec![0u8; 48];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&8u16.to_be_bytes());
    p[6] = 17;
    p[7] = 64;
    p[8] = 0x20;
    p[9] = 0x01;
    p[23] = a;
    p[24] = 0x20;
    p[25] = 0x01;
    p[39] = b;
    p
}

const S: u64 = 1_000_000_000;
const T0: u64 = 1_700_000_000 * S;
const FIELDS: &str = "ip_src sport ip_dst dport ip_proto aggregate";

// ---- CuckooHash ----

#[test]
fn cuckoo_hash_flow_key_hits_misses_and_bad_packets() {
    let table =
        file("# flows\n10.0.0.1 1000 10.0.0.2 80 tcp 7\n\n10.0.0.3 53 10.0.0.4 5353 17 42\n");
    let pkts = [
        v4([10, 0, 0, 1], 1000, [10, 0, 0, 2], 80, 6, 0x10),
        v4([10, 0, 0, 3], 53, [10, 0, 0, 4], 5353, 17, 0),
        v4([10, 0, 0, 3], 53, [10, 0, 0, 4], 5354, 17, 0),
        vec![0x45, 0, 0, 20, 0, 0],
        v4([10, 0, 0, 1], 1000, [10, 0, 0, 2], 80, 6, 0x10),
    ];
    let f = pcap(&pkts.iter().map(|p| (T0, p.clone())).collect::<Vec<_>>());
    let (hit, miss) = (tmp("hit.txt"), tmp("miss.txt"));
    let r = run(&format!(
        "FromDump({}, STOP true) -> MarkIPHeader -> t :: CuckooHash(FILE {}, CAPACITY 3);
         t[0] -> ToIPSummaryDump({}, FIELDS {FIELDS}) -> Discard;
         t[1] -> ToIPSummaryDump({}, FIELDS {FIELDS}) -> Discard;
         t[2] -> bad :: Counter -> Discard;",
        f.display(),
        table.display(),
        hit.display(),
        miss.display()
    ));
    assert_eq!(
        summary(&hit),
        [
            "10.0.0.1 1000 10.0.0.2 80 T 7",
            "10.0.0.3 53 10.0.0.4 5353 U 42",
            "10.0.0.1 1000 10.0.0.2 80 T 7"
        ]
    );
    assert_eq!(summary(&miss), ["10.0.0.3 53 10.0.0.4 5354 U 0"]);
    assert_eq!(read(&r, "bad.count"), "1");
    for (h, v) in [
        ("hits", "3"),
        ("misses", "1"),
        ("drops", "1"),
        ("count", "2"),
        ("capacity", "3"),
    ] {
        assert_eq!(read(&r, &format!("t.{h}")), v, "{h}");
    }
    // Handlers: lookup is write-then-read; inserts stop at CAPACITY.
    write(&r, "t.lookup", "10.0.0.3 53 10.0.0.4 5353 udp").unwrap();
    assert_eq!(read(&r, "t.lookup"), "42");
    write(&r, "t.insert", "10.0.0.3 53 10.0.0.4 5353 udp 43").unwrap();
    write(&r, "t.insert", "::1 1 ::2 2 6 9").unwrap();
    assert_eq!(read(&r, "t.count"), "3");
    assert_eq!(
        write(&r, "t.insert", "::1 1 ::3 2 6 9").unwrap_err(),
        "table full"
    );
    write(&r, "t.lookup", "10.0.0.3 53 10.0.0.4 5353 udp").unwrap();
    assert_eq!(read(&r, "t.lookup"), "43");
    write(&r, "t.delete", "10.0.0.3 53 10.0.0.4 5353 17").unwrap();
    assert_eq!(
        write(&r, "t.delete", "10.0.0.3 53 10.0.0.4 5353 17").unwrap_err(),
        "no such key"
    );
    write(&r, "t.lookup", "10.0.0.3 53 10.0.0.4 5353 17").unwrap();
    assert_eq!(read(&r, "t.lookup"), "-1");
    assert!(write(&r, "t.insert", "10.0.0.1 1 ::2 2 6 9")
        .unwrap_err()
        .contains("both addresses"));
    assert!(write(&r, "t.insert", "10.0.0.1 1 10.0.0.2 2 6 x")
        .unwrap_err()
        .contains("expected 32-bit unsigned value"));
    let more = file("10.9.9.9 1 10.9.9.8 2 6 5\n10.9.9.9 1 10.9.9.8 3 six 5\n");
    let e = write(&r, "t.load", &more.display().to_string()).unwrap_err();
    assert!(
        e.ends_with(":2: expected protocol number or name, got 'six'"),
        "{e}"
    );
    assert_eq!(read(&r, "t.count"), "2", "a bad file inserts nothing");
}

/// Short and malformed raw-IP packets: empty, one byte, an IPv4 header
/// cut at 19 bytes, version 5, an IPv6 header cut at 39 bytes, garbage
/// (version 15); then one whole packet.
fn malformed_then_one() -> Vec<(u64, Vec<u8>)> {
    let good = v4([10, 0, 0, 1], 1000, [10, 0, 0, 2], 80, 6, 0x10);
    let mut v5 = good.clone();
    v5[0] = 0x55;
    let mut v6 = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
    v6.resize(39, 1);
    [
        vec![],
        vec![0x45],
        good[..19].to_vec(),
        v5,
        v6,
        vec![0xff; 64],
        good,
    ]
    .into_iter()
    .map(|p| (T0, p))
    .collect()
}

#[test]
fn short_and_malformed_packets_leave_on_output_2() {
    // Never a panic: every such packet is counted in `drops` and leaves
    // on output 2, in both implementations and with every key reading
    // that needs a header or bytes the packets lack.
    let input = pcap(&malformed_then_one());
    for imp in ["fast", "reference"] {
        // Header keys: only the whole packet has one. Byte keys: the four
        // packets with the bytes have one (v5, the cut IPv6 header, the
        // garbage, the whole packet).
        for (key, want) in [
            ("FLOW", ["0", "1", "6"]),
            ("SRC", ["0", "1", "6"]),
            ("DST", ["0", "1", "6"]),
            ("OFFSET 12 LEN 12", ["0", "4", "3"]),
            ("OFFSET 0 LEN 20", ["0", "4", "3"]),
        ] {
            let r = run(&format!(
                "FromDump({}, STOP true) -> MarkIPHeader
                     -> t :: CuckooHash(KEY {key}, IMPL {imp});
                 t[0] -> c0 :: Counter -> Discard; t[1] -> c1 :: Counter -> Discard;
                 t[2] -> bad :: Counter -> Discard;",
                input.display()
            ));
            let got = ["c0", "c1", "bad"].map(|c| read(&r, &format!("{c}.count")));
            assert_eq!(got, want, "{imp} {key}");
            assert_eq!(read(&r, "t.drops"), want[2], "{imp} {key}");
        }
        let r = run(&format!(
            "FromDump({}, STOP true, BURST 1) -> MarkIPHeader
                 -> fc :: FlowCache(LINES 64, WAYS 2, FLOWS 8, IMPL {imp});
             fc[0] -> c0 :: Counter -> Discard; fc[1] -> [1]fc;
             fc[2] -> bad :: Counter -> Discard;",
            input.display()
        ));
        assert_eq!(read(&r, "c0.count"), "1", "{imp}");
        assert_eq!(read(&r, "bad.count"), "6", "{imp}");
        assert_eq!(read(&r, "fc.drops"), "6", "{imp}");
    }
}

#[test]
fn cuckoo_hash_address_and_byte_keys() {
    let pkts = [
        (T0, v6(1, 2)),
        (T0, v6(1, 3)),
        (T0, v4([10, 0, 0, 1], 1, [10, 0, 0, 2], 2, 17, 0)),
        (T0, vec![0x60, 0, 0]),
    ];
    let f = pcap(&pkts);
    let r = run(&format!(
        "FromDump({}, STOP true) -> t :: CuckooHash(KEY DST, ANNO PAINT);
         t[0] -> c0 :: Counter -> Discard; t[1] -> c1 :: Counter -> Discard;
         t[2] -> c2 :: Counter -> Discard;",
        f.display()
    ));
    assert_eq!(read(&r, "c1.count"), "3");
    assert_eq!(read(&r, "c2.count"), "1");
    write(&r, "t.insert", "2001::2 5").unwrap();
    write(&r, "t.insert", "10.0.0.2 6").unwrap();
    write(&r, "t.lookup", "::ffff:10.0.0.2").unwrap();
    assert_eq!(read(&r, "t.lookup"), "6", "IPv4 keys are IPv4-mapped");
    // Bytes 12..16 of the packet: the IPv4 source address.
    let table = file("0a000001 1\n0a000009 2\n");
    let out = tmp("bytes.txt");
    let r = run(&format!(
        "FromDump({}, STOP true) -> t :: CuckooHash(KEY OFFSET 12 LEN 4, FILE {});
         t[0] -> ToIPSummaryDump({}, FIELDS ip_src aggregate) -> Discard;
         t[1] -> c1 :: Counter -> Discard; t[2] -> c2 :: Counter -> Discard;",
        f.display(),
        table.display(),
        out.display()
    ));
    assert_eq!(summary(&out), ["10.0.0.1 1"]);
    assert_eq!(
        read(&r, "c1.count"),
        "2",
        "IPv6 bytes 12..16 are not in the table"
    );
    assert_eq!(read(&r, "c2.count"), "1", "3 bytes are too short");
}

/// Tables filled to their capacity (85 % of their slots), through both of
/// the fast table's layouts (keys of 12 bytes inside their buckets, 16
/// bytes beside them): at that load many keys live in their second bucket
/// and are moved there by displacement; every one is found with its value,
/// as the reference finds it.
#[test]
fn cuckoo_hash_full_tables_as_reference() {
    const N: u32 = 3000;
    let addr = |i: u32| (0x0a00_0000 | (i * 7919)).to_be_bytes();
    let pkts: Vec<(u64, Vec<u8>)> = (0..N + N / 6)
        .map(|j| {
            let i = j * 1237 % (N + N / 6);
            (T0, v4(addr(i), 1000 + i as u16, [10, 1, 0, 1], 53, 17, 0))
        })
        .collect();
    let input = pcap(&pkts);
    for (len, hex_tail) in [(12, ""), (16, "00000000")] {
        let mut t = String::new();
        for i in 0..N {
            let [a, b, c, d] = addr(i);
            t.push_str(&format!(
                "{a:02x}{b:02x}{c:02x}{d:02x}0a010001{:04x}0035{hex_tail} {}\n",
                1000 + i,
                i * 3 + 1
            ));
        }
        let table = file(&t);
        let config = format!(
            "FromDump({{IN}}, STOP true) -> t :: CuckooHash(KEY OFFSET 12 LEN {len}, CAPACITY {N}, FILE {}, IMPL {{IMPL}});
             t[0] -> ToIPSummaryDump({{O0}}, FIELDS ip_src sport aggregate) -> Discard;
             t[1] -> ToIPSummaryDump({{O1}}, FIELDS ip_src sport) -> Discard;",
            table.display()
        );
        let reads = ["t.hits", "t.misses", "t.count"];
        let fast = outcome(&config, "fast", &input, &reads);
        assert_eq!(
            fast[fast.len() - 3..],
            ["t.hits=3000", "t.misses=500", "t.count=3000"]
        );
        assert_eq!(
            fast,
            outcome(&config, "reference", &input, &reads),
            "LEN {len}"
        );
    }
}

/// `KEY ANNO`: the destination address `CheckIPHeader` leaves in
/// `DST_IP` (4 bytes, kept inside the buckets), as the reference finds it.
#[test]
fn cuckoo_hash_annotation_keys() {
    let pkts: Vec<(u64, Vec<u8>)> = (0..40u8)
        .map(|i| (T0, v4([10, 0, 0, 1], 1000, [10, 0, 0, i % 7], 53, 17, 0)))
        .collect();
    let input = pcap(&pkts);
    let table = file("0a000002 20\n0a000005 50\n0a000000 1\n");
    let config = format!(
        "FromDump({{IN}}, STOP true) -> CheckIPHeader(CHECKSUM false)
             -> t :: CuckooHash(KEY ANNO DST_IP, FILE {}, IMPL {{IMPL}});
         t[0] -> ToIPSummaryDump({{O0}}, FIELDS ip_dst aggregate) -> Discard;
         t[1] -> ToIPSummaryDump({{O1}}, FIELDS ip_dst) -> Discard;",
        table.display()
    );
    let reads = ["t.hits", "t.misses"];
    let fast = outcome(&config, "fast", &input, &reads);
    assert_eq!(fast[fast.len() - 2..], ["t.hits=17", "t.misses=23"]);
    assert!(fast.contains(&"10.0.0.5 50".to_string()), "{fast:?}");
    assert!(fast.contains(&"10.0.0.0 1".to_string()), "{fast:?}");
    assert_eq!(fast, outcome(&config, "reference", &input, &reads));
}

#[test]
fn cuckoo_hash_configuration_errors() {
    let e = common::build(
        "Idle -> t :: CuckooHash(KEY OFFSET 0 LEN 41, ANNO NOPE, IMPL slow); t[0] -> Discard; t[1] -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("KEY: LEN must be 1 to 40"), "{e}");
    assert!(e.contains("ANNO: no 4-byte annotation 'NOPE'"), "{e}");
    assert!(e.contains("IMPL: expected fast or reference"), "{e}");
}

// ---- FlowCache ----

#[test]
fn flow_cache_slow_path_hits_fin_and_timeout() {
    let a = |flags| v4([10, 0, 0, 1], 1000, [10, 0, 0, 2], 80, 6, flags);
    let b = v4([10, 0, 0, 3], 53, [10, 0, 0, 4], 53, 17, 0);
    let c = v4([10, 0, 0, 5], 54, [10, 0, 0, 6], 53, 17, 0);
    let d = v4([10, 0, 0, 7], 55, [10, 0, 0, 8], 53, 17, 0);
    let ms = |m: u64| T0 + m * 1_000_000;
    let pkts = [
        (ms(0), a(0x02)),          // miss; the slow path creates flow 0
        (ms(500), a(0x10)),        // hit 0
        (ms(500), b.clone()),      // miss: flow 1
        (ms(500), a(0x11)),        // hit 0 with FIN: flow 0 closed
        (ms(1000), a(0x10)),       // miss: a new flow 0
        (ms(1000), b.clone()),     // hit 1
        (ms(2000), c),             // sweep (nothing idle 2 s); miss: flow 2
        (ms(3500), b.clone()),     // idle 2.5 s: expired, miss; new flow 1
        (ms(3500), d),             // miss; the table is full: dropped
        (ms(5000), vec![0x45, 0]), // sweep expires flows 0 and 2; no 5-tuple
    ];
    // One packet a batch, so that the slow path runs between packets.
    let f = pcap(&pkts);
    let out = tmp("fc.txt");
    let r = run(&format!(
        "FromDump({}, STOP true, BURST 1) -> MarkIPHeader
             -> fc :: FlowCache(LINES 64, WAYS 2, FLOWS 3, TIMEOUT 2s);
         fc[0] -> ToIPSummaryDump({}, FIELDS sport aggregate) -> Discard;
         fc[1] -> [1]fc; fc[2] -> bad :: Counter -> Discard;",
        f.display(),
        out.display()
    ));
    assert_eq!(
        summary(&out),
        ["1000 0", "1000 0", "53 1", "1000 0", "1000 0", "53 1", "54 2", "53 1"]
    );
    for (h, v) in [
        ("hits", "3"),
        ("misses", "6"),
        ("closed", "1"),
        ("expired", "3"),
        ("count", "1"),
        ("cached", "1"),
        ("drops", "2"),
        ("capacity", "3"),
    ] {
        assert_eq!(read(&r, &format!("fc.{h}")), v, "{h}");
    }
    assert_eq!(read(&r, "bad.count"), "2");
    write(&r, "fc.lookup", "10.0.0.3 53 10.0.0.4 53 udp").unwrap();
    assert_eq!(read(&r, "fc.lookup"), "1");
    write(&r, "fc.lookup", "10.0.0.5 54 10.0.0.6 53 udp").unwrap();
    assert_eq!(read(&r, "fc.lookup"), "-1");
    write(&r, "fc.insert", "10.0.0.7 1 10.0.0.8 2 udp").unwrap();
    write(&r, "fc.lookup", "10.0.0.7 1 10.0.0.8 2 udp").unwrap();
    assert_eq!(read(&r, "fc.lookup"), "0", "the smallest free id");
    write(&r, "fc.insert", "10.0.0.9 1 10.0.0.8 2 udp").unwrap();
    assert_eq!(
        write(&r, "fc.insert", "10.0.0.10 1 10.0.0.8 2 udp").unwrap_err(),
        "flow table full"
    );
    write(&r, "fc.delete", "10.0.0.3 53 10.0.0.4 53 udp").unwrap();
    assert_eq!(
        write(&r, "fc.delete", "10.0.0.3 53 10.0.0.4 53 udp").unwrap_err(),
        "no such flow"
    );
    assert_eq!(read(&r, "fc.count"), "2");
    assert_eq!(read(&r, "fc.cached"), "2");
}

#[test]
fn flow_cache_loaded_flows_and_lru_eviction() {
    let table = file("10.0.0.1 1 10.0.0.2 2 udp\n10.0.0.1 1 10.0.0.2 3 udp\n");
    let p = |dp| v4([10, 0, 0, 1], 1, [10, 0, 0, 2], dp, 17, 0);
    // One set of one way: every new flow evicts the last.
    let pkts: Vec<(u64, Vec<u8>)> = [3, 3, 2, 3, 2, 2].iter().map(|&d| (T0, p(d))).collect();
    let f = pcap(&pkts);
    let out = tmp("lru.txt");
    let r = run(&format!(
        "FromDump({}, STOP true, BURST 1) -> MarkIPHeader -> fc :: FlowCache(LINES 1, WAYS 1, FILE {});
         fc[0] -> ToIPSummaryDump({}, FIELDS dport aggregate) -> Discard; fc[1] -> [1]fc;",
        f.display(),
        table.display(),
        out.display()
    ));
    assert_eq!(summary(&out), ["3 1", "3 1", "2 0", "3 1", "2 0", "2 0"]);
    assert_eq!(read(&r, "fc.hits"), "2");
    assert_eq!(read(&r, "fc.misses"), "4");
    assert_eq!(read(&r, "fc.count"), "2");
}

#[test]
fn flow_cache_misses_leave_in_order() {
    // Both implementations share the split: misses on output 1 in arrival
    // order, whether a batch holds a few (moved out of it) or many (a full
    // split), and hits on output 0 in order, before the batch's misses
    // come back from the slow path.
    let p = |n: u8| v4([10, 0, 0, n], 1, [10, 0, 0, 99], 2, 17, 0);
    let order: Vec<u8> = [
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],         // 10 misses
        [1, 11, 2, 12, 3, 13, 4, 5, 6, 7],       // 3 misses
        [21, 22, 23, 24, 25, 26, 27, 28, 1, 2],  // 8 misses
        [31, 32, 33, 34, 35, 36, 37, 38, 39, 3], // 9 misses
    ]
    .concat();
    let (mut flows, mut want0, mut want1) = (Vec::new(), Vec::new(), Vec::new());
    for batch in order.chunks(10) {
        let mut misses = Vec::new();
        for &n in batch {
            match flows.iter().position(|&f| f == n) {
                Some(id) => want0.push(format!("10.0.0.{n} {id}")),
                None => {
                    flows.push(n);
                    misses.push(n);
                    want1.push(format!("10.0.0.{n}"));
                }
            }
        }
        for n in misses {
            let id = flows.iter().position(|&f| f == n).unwrap();
            want0.push(format!("10.0.0.{n} {id}"));
        }
    }
    let pkts: Vec<(u64, Vec<u8>)> = order.iter().map(|&n| (T0, p(n))).collect();
    let f = pcap(&pkts);
    let (hits, misses) = (tmp("fc-hits.txt"), tmp("fc-misses.txt"));
    for imp in ["fast", "reference"] {
        run(&format!(
            "FromDump({}, STOP true, BURST 10) -> MarkIPHeader
                 -> fc :: FlowCache(LINES 1024, WAYS 4, IMPL {imp});
             fc[0] -> ToIPSummaryDump({}, FIELDS ip_src aggregate) -> Discard;
             fc[1] -> ToIPSummaryDump({}, FIELDS ip_src) -> [1]fc;",
            f.display(),
            hits.display(),
            misses.display()
        ));
        assert_eq!(summary(&misses), want1, "{imp}");
        assert_eq!(summary(&hits), want0, "{imp}");
    }
}

#[test]
fn flow_cache_slow_group_sees_its_own_changes() {
    // Flow a is in the table (loaded) but not in the cache: the slow path
    // looks the group [a with FIN, b, a] up at once, then a's FIN frees
    // id 0, b takes it, and the second a must start a new flow (id 1),
    // not reuse the group's stale answer.
    let table = file("10.0.0.1 1000 10.0.0.2 80 tcp\n");
    let a = |flags| v4([10, 0, 0, 1], 1000, [10, 0, 0, 2], 80, 6, flags);
    let b = v4([10, 0, 0, 3], 53, [10, 0, 0, 4], 53, 17, 0);
    let pkts = [(T0, a(0x11)), (T0, b), (T0, a(0x10))];
    let f = pcap(&pkts);
    let out = tmp("fc-group.txt");
    for imp in ["fast", "reference"] {
        let r = run(&format!(
            "FromDump({}, STOP true, BURST 3) -> MarkIPHeader
                 -> fc :: FlowCache(LINES 64, WAYS 4, FILE {}, IMPL {imp});
             fc[0] -> ToIPSummaryDump({}, FIELDS sport aggregate) -> Discard;
             fc[1] -> [1]fc;",
            f.display(),
            table.display(),
            out.display()
        ));
        assert_eq!(summary(&out), ["1000 0", "53 0", "1000 1"], "{imp}");
        assert_eq!(read(&r, "fc.closed"), "1", "{imp}");
        assert_eq!(read(&r, "fc.count"), "2", "{imp}");
    }
}

// ---- differential: fast and reference agree ----

/// A packet from a small pool of flows: `(flow, tcp flags, truncated)`.
fn packet(flow: u8, flags: u8, trunc: bool) -> Vec<u8> {
    if trunc {
        return vec![0x45, 0, 0, 20, 0, 0, 0, 0];
    }
    let proto = if flow.is_multiple_of(3) { 17 } else { 6 };
    v4(
        [10, 0, 0, flow % 5],
        1000 + u16::from(flow / 5),
        [10, 1, 0, 1],
        80,
        proto,
        flags,
    )
}

/// [`packet`] in an Ethernet frame, except that flows 30 and up are
/// IPv6 (TCP or UDP, the same flow numbering; `trunc`: an IPv6 header cut
/// short).
fn frame(flow: u8, flags: u8, trunc: bool) -> Vec<u8> {
    let (ethertype, ip) = if flow < 30 {
        (0x0800u16, packet(flow, flags, trunc))
    } else if trunc {
        (0x86dd, vec![0x60, 0, 0, 0, 0, 8, 17])
    } else {
        let proto = if flow.is_multiple_of(3) { 17 } else { 6 };
        let l4_len = if proto == 6 { 20 } else { 8 };
        let mut p = vec![0u8; 40 + l4_len];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        p[6] = proto;
        p[7] = 64;
        p[8..10].copy_from_slice(&[0x20, 0x01]);
        // Flows differ in the source address's last byte and the source
        // port; all share the destination.
        p[23] = flow % 5;
        p[24..26].copy_from_slice(&[0x20, 0x01]);
        p[39] = 1;
        p[40..42].copy_from_slice(&(1000 + u16::from(flow / 5)).to_be_bytes());
        p[42..44].copy_from_slice(&80u16.to_be_bytes());
        if proto == 6 {
            p[52] = 0x50;
            p[53] = flags;
        }
        (0x86dd, p)
    };
    let mut f = vec![0u8; 14];
    f[12..14].copy_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(&ip);
    f
}

/// The time unit of the flow cache's random traffic: gaps of up to 20 ms,
/// so that a flow's next packet (about 40 packets later) comes within the
/// tests' timeouts (up to 3 s) or after them, both often.
const FLOW_GAP: u64 = 25_000;

fn flow_text(flow: u8) -> String {
    let proto = if flow.is_multiple_of(3) { 17 } else { 6 };
    format!(
        "10.0.0.{} {} 10.1.0.1 80 {proto}",
        flow % 5,
        1000 + u16::from(flow / 5)
    )
}

fn traffic() -> impl Strategy<Value = Vec<(u64, Vec<u8>)>> {
    traffic_of(packet, 1_000_000)
}

/// Random traffic of the 40 flows, each packet built by `make(flow, TCP
/// flags, truncated)`, 0 to 800 `unit`s (ns) after the one before.
fn traffic_of(
    make: fn(u8, u8, bool) -> Vec<u8>,
    unit: u64,
) -> impl Strategy<Value = Vec<(u64, Vec<u8>)>> {
    proptest::collection::vec(
        (
            0u8..40,
            prop_oneof![8 => Just(0x10u8), 1 => Just(0x11), 1 => Just(0x04)],
            0u64..800,
            proptest::bool::weighted(0.03),
        ),
        1..300,
    )
    .prop_map(move |v| {
        let mut t = T0;
        v.into_iter()
            .map(|(f, fl, gap, tr)| {
                t += gap * unit;
                (t, make(f, fl, tr))
            })
            .collect()
    })
}

/// Run `config` (`{IMPL}` replaced) on `input`; the outputs' summaries and
/// the handler values.
fn outcome(config: &str, imp: &str, input: &Path, reads: &[&str]) -> Vec<String> {
    let o: Vec<PathBuf> = (0..2).map(|i| tmp(&format!("o{i}.txt"))).collect();
    let text = config
        .replace("{IMPL}", imp)
        .replace("{IN}", &input.display().to_string());
    let mut text = text;
    for (i, p) in o.iter().enumerate() {
        text = text.replace(&format!("{{O{i}}}"), &p.display().to_string());
    }
    let r = run(&text);
    let mut v = Vec::new();
    for p in &o {
        if p.exists() {
            v.extend(summary(p));
        }
        v.push("--".into());
    }
    for h in reads {
        v.push(format!("{h}={}", read(&r, h)));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn cuckoo_hash_fast_equals_reference(
        pkts in traffic(),
        entries in proptest::collection::vec((0u8..40, any::<u32>()), 0..30),
        cap in 1u32..40,
        key in 0usize..6,
        ops in proptest::collection::vec((0u8..3, 0u8..40, any::<u32>()), 0..20),
    ) {
        let input = pcap(&pkts);
        let (spec, text): (&str, fn(u8) -> String) = match key {
            0 => ("FLOW", flow_text),
            1 => ("SRC", |f| format!("10.0.0.{}", f % 5)),
            2 => ("OFFSET 20 LEN 2", |f| format!("{:04x}", 1000 + u16::from(f / 5))),
            // Two words; the second runs past a UDP packet's end at
            // offset 14 (the fast reading declines, the general one reads).
            3 => ("OFFSET 12 LEN 12", |f| {
                format!("0a0000{:02x}0a010001{:04x}0050", f % 5, 1000 + u16::from(f / 5))
            }),
            4 => ("OFFSET 14 LEN 12", |f| {
                format!("00{:02x}0a010001{:04x}00500000", f % 5, 1000 + u16::from(f / 5))
            }),
            // The AGGREGATE annotation (host order), which AggregateIPFlows
            // sets to a flow number by order of appearance.
            _ => ("ANNO AGGREGATE", |f| format!("{f:02x}000000")),
        };
        let pre = if key == 5 { "-> AggregateIPFlows " } else { "" };
        let mut t = String::new();
        for (f, v) in &entries {
            t.push_str(&format!("{} {v}\n", text(*f)));
        }
        let table = file(&t);
        let config = format!(
            "FromDump({{IN}}, STOP true) -> MarkIPHeader {pre}-> t :: CuckooHash(KEY {spec}, CAPACITY {cap}, IMPL {{IMPL}});
             t[0] -> ToIPSummaryDump({{O0}}, FIELDS {FIELDS}) -> Discard;
             t[1] -> ToIPSummaryDump({{O1}}, FIELDS {FIELDS}) -> Discard;
             t[2] -> bad :: Counter -> Discard;"
        );
        let reads = ["t.hits", "t.misses", "t.drops", "t.count", "t.capacity", "bad.count"];
        let mut results = Vec::new();
        for imp in ["fast", "reference"] {
            let o = outcome(&config, imp, &input, &[]);
            // Table changes through handlers, then the same traffic again.
            let text2 = config
                .replace("{IMPL}", imp)
                .replace("{IN}", &input.display().to_string())
                .replace("{O0}", &tmp("x0").display().to_string())
                .replace("{O1}", &tmp("x1").display().to_string());
            let r = run(&text2);
            let mut h = o;
            h.push(format!("load={:?}", write(&r, "t.load", &table.display().to_string())));
            for (op, f, v) in &ops {
                let res = match op {
                    0 => write(&r, "t.insert", &format!("{} {v}", text(*f))),
                    1 => write(&r, "t.delete", &text(*f)),
                    _ => {
                        let res = write(&r, "t.lookup", &text(*f));
                        if res.is_ok() {
                            h.push(read(&r, "t.lookup"));
                        }
                        res
                    }
                };
                h.push(format!("{res:?}"));
            }
            for x in reads {
                h.push(read(&r, x));
            }
            results.push(h);
        }
        prop_assert_eq!(&results[0], &results[1]);
    }

    #[test]
    fn flow_cache_fast_equals_reference(
        pkts in traffic_of(packet, FLOW_GAP),
        loaded in proptest::collection::vec(0u8..40, 0..10),
        ways in 1u32..5,
        sets in 1u32..5,
        flows in 1u32..30,
        timeout_ms in 0u64..3000,
        burst in 1usize..70,
    ) {
        let input = pcap(&pkts);
        let table = file(
            &loaded
                .iter()
                .take(flows as usize)
                .map(|&f| flow_text(f) + "\n")
                .collect::<String>(),
        );
        let config = format!(
            "FromDump({{IN}}, STOP true, BURST {burst}) -> MarkIPHeader
                 -> fc :: FlowCache(LINES {}, WAYS {ways}, FLOWS {flows}, TIMEOUT {timeout_ms}ms,
                                    FILE {}, IMPL {{IMPL}});
             fc[0] -> ToIPSummaryDump({{O0}}, FIELDS {FIELDS}) -> Discard;
             fc[1] -> [1]fc;
             fc[2] -> bad :: Counter -> Discard;",
            sets * ways,
            table.display()
        );
        let reads = ["bad.count", "fc.hits", "fc.misses", "fc.expired", "fc.closed", "fc.drops", "fc.count", "fc.cached"];
        let a = outcome(&config, "fast", &input, &reads);
        let b = outcome(&config, "reference", &input, &reads);
        prop_assert_eq!(a, b);
    }

    /// The same with IPv4 and IPv6 flows (the fast cache keeps IPv6 keys
    /// apart from its sets) in Ethernet frames through `L4Parser`.
    #[test]
    fn flow_cache_ipv6_fast_equals_reference(
        pkts in traffic_of(frame, FLOW_GAP),
        ways in 1u32..5,
        sets in 1u32..5,
        flows in 1u32..30,
        timeout_ms in 0u64..3000,
        burst in 1usize..70,
    ) {
        let input = pcap_of(LinkType::ETHERNET, &pkts);
        let config = format!(
            "FromDump({{IN}}, STOP true, BURST {burst}) -> p :: L4Parser
                 -> fc :: FlowCache(LINES {}, WAYS {ways}, FLOWS {flows}, TIMEOUT {timeout_ms}ms,
                                    IMPL {{IMPL}});
             p[1] -> bad :: Counter -> Discard;
             fc[0] -> ToIPSummaryDump({{O0}}, FIELDS {FIELDS}) -> Discard;
             fc[1] -> [1]fc;
             fc[2] -> full :: Counter -> Discard;",
            sets * ways,
        );
        let reads = ["bad.count", "full.count", "fc.hits", "fc.misses", "fc.expired", "fc.closed", "fc.drops", "fc.count", "fc.cached"];
        let a = outcome(&config, "fast", &input, &reads);
        let b = outcome(&config, "reference", &input, &reads);
        prop_assert_eq!(a, b);
    }
}
