//! The scheduling elements of issue 4 (SRPrioQueue, RateLimiter, RSS):
//! literal packets and exact expected outputs and handler values, the
//! Microsoft RSS verification suite, and differential property tests of
//! the fast implementations against `IMPL reference`.

mod common;

use common::run;
use linerate_elements::sched::ratelimiter::{Classify, FastBuckets, Rate, RefBuckets, Unit};
use linerate_elements::sched::rss::{
    hash_fast, input_reference, toeplitz_reference, Toeplitz, MS_KEY,
};
use linerate_elements::sched::srprioqueue::{ArrayQueue, TreeQueue};
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_runtime::anno::{offsets, AnnoInfo};
use linerate_runtime::{Batch, Packet, Router, RouterOptions};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn sim() -> RouterOptions {
    RouterOptions {
        simtime: Some(1_000_000_000),
        ..Default::default()
    }
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    // Read values end in a newline, except empty ones.
    assert!(v.is_empty() || v.ends_with('\n'), "{h}: {v:?}");
    v.trim_end().to_string()
}

fn tmp(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("linerate-sched-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)))
}

/// A pcap of `frames` (timestamps in µs).
fn write_pcap(frames: &[(u64, Vec<u8>)]) -> PathBuf {
    let p = tmp("in.pcap");
    let mut w = PcapWriter::create(&p, LinkType::ETHERNET, 65535, true).unwrap();
    for (us, f) in frames {
        w.write(1_000_000_000 + us * 1000, f.len() as u32, f)
            .unwrap();
    }
    w.flush().unwrap();
    p
}

fn frames_of(p: &Path) -> Vec<Vec<u8>> {
    let mut r = PcapReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

fn tags(p: &Path) -> Vec<u8> {
    frames_of(p).iter().map(|f| *f.last().unwrap()).collect()
}

/// Ethernet + IPv4/UDP from 10.0.0.1 with a 4-byte big-endian payload
/// `prio` at offset 42 and a last byte `tag`.
fn frame(tag: u8, prio: u32) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 5];
    f[12] = 0x08;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&33u16.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, tag]);
    f[42..46].copy_from_slice(&prio.to_be_bytes());
    f[46] = tag;
    f
}

// ---------------------------------------------------------------- SRPrioQueue

#[test]
fn srprioqueue_dequeues_lowest_value_first_and_drops_the_worst() {
    let prios = [5, 3, 9, 3, 1, 7, 3, 0];
    let mut frames: Vec<_> = (1..=8)
        .map(|i| (0, frame(i, prios[i as usize - 1])))
        .collect();
    frames.push((0, vec![0xee; 40])); // too short for the field
    let inp = write_pcap(&frames);
    let (out, drops) = (tmp("out.pcap"), tmp("drops.pcap"));
    let r = run(
        &format!(
            "FromDump({}) -> Counter(COUNT_CALL 9 u.active true)
               -> q :: SRPrioQueue(4, OFFSET 42, LENGTH 4);
             q[1] -> ToDump({});
             q -> u :: Unqueue(ACTIVE false) -> Counter(COUNT_CALL 4 stop) -> ToDump({});",
            inp.display(),
            drops.display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    // 9 evicts tag 3, 7 (arriving) is worse than everything, 3 evicts the 5
    // (tag 1), 0 evicts the newest 3 (tag 7).
    assert_eq!(tags(&drops), vec![3, 6, 1, 7, 0xee]);
    assert_eq!(tags(&out), vec![8, 5, 2, 4]);
    assert_eq!(read(&r, "q.drops"), "4");
    assert_eq!(read(&r, "q.short"), "1");
    assert_eq!(read(&r, "q.highwater_length"), "4");
    assert_eq!(read(&r, "q.length"), "0");
    assert_eq!(read(&r, "q.capacity"), "4");
    r.handle().call("q.reset_counts", Some("")).unwrap();
    assert_eq!(read(&r, "q.drops"), "0");
    assert_eq!(read(&r, "q.highwater_length"), "0");
}

#[test]
fn srprioqueue_reads_annotations_and_is_fifo_among_equals() {
    let frames: Vec<_> = (1..=6).map(|i| (0, frame(i, 0))).collect();
    let inp = write_pcap(&frames);
    let out = tmp("out.pcap");
    // RoundRobinSwitch sends 1, 3, 5 (painted 5) first, then 2, 4, 6 (painted 2).
    run(
        &format!(
            "FromDump({}) -> Counter(COUNT_CALL 6 u.active true) -> rr :: RoundRobinSwitch;
             rr[0] -> Paint(5) -> q :: SRPrioQueue(ANNO PAINT, IMPL reference);
             rr[1] -> Paint(2) -> q;
             q -> u :: Unqueue(ACTIVE false) -> Counter(COUNT_CALL 6 stop) -> ToDump({});",
            inp.display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(tags(&out), vec![2, 4, 6, 1, 3, 5]);
}

#[test]
fn srprioqueue_capacity_write_drops_the_worst_and_bad_arguments_fail() {
    let frames: Vec<_> = (1..=6).map(|i| (0, frame(i, 10 - i as u32))).collect();
    let inp = write_pcap(&frames);
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> q :: SRPrioQueue(8, OFFSET 45, LENGTH 1) -> Idle;",
            inp.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "q.length"), "6");
    r.handle().call("q.capacity", Some("2")).unwrap();
    assert_eq!(read(&r, "q.length"), "2");
    assert_eq!(read(&r, "q.drops"), "4");
    assert!(r.handle().call("q.capacity", Some("0")).is_err());
    r.handle().call("q.reset", Some("")).unwrap();
    assert_eq!(read(&r, "q.length"), "0");
    for bad in [
        "SRPrioQueue",
        "SRPrioQueue(ANNO PAINT, OFFSET 4)",
        "SRPrioQueue(0, ANNO PAINT)",
        "SRPrioQueue(OFFSET 4, LENGTH 5)",
        "SRPrioQueue(ANNO PAINT, SIZE 3)",
        "SRPrioQueue(ANNO FIRST_TIMESTAMP)",
        "SRPrioQueue(ANNO PAINT, IMPL slow)",
    ] {
        let e = common::build(&format!("Idle -> {bad} -> Idle;"), RouterOptions::default());
        assert!(e.is_err(), "{bad}");
    }
}

#[derive(Debug, Clone)]
enum QOp {
    Push(u32),
    Pop(usize),
    Capacity(usize),
}

fn qop() -> impl Strategy<Value = QOp> {
    prop_oneof![
        6 => prop_oneof![0u32..4, any::<u32>(), Just(u32::MAX)].prop_map(QOp::Push),
        2 => (0usize..40).prop_map(QOp::Pop),
        1 => (1usize..40).prop_map(QOp::Capacity),
    ]
}

fn tag_of(p: &Packet) -> u32 {
    u32::from_be_bytes(p.data()[..4].try_into().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn srprioqueue_array_matches_ordered_map(
        cap in 1usize..40,
        ops in prop::collection::vec(qop(), 0..300),
    ) {
        let mut fast = ArrayQueue::new(cap);
        let mut slow = TreeQueue::new(cap);
        for (i, op) in ops.iter().enumerate() {
            let pk = || Packet::from_slice(&(i as u32).to_be_bytes());
            match op {
                QOp::Push(prio) => {
                    let a = fast.push(*prio, pk()).map(|p| tag_of(&p));
                    let b = slow.push(*prio, pk()).map(|p| tag_of(&p));
                    prop_assert_eq!(a, b);
                }
                QOp::Pop(k) => {
                    let mut a = Batch::new();
                    fast.pop_into(*k, &mut a);
                    let b: Vec<u32> = (0..*k).map_while(|_| slow.pop()).map(|p| tag_of(&p)).collect();
                    prop_assert_eq!(a.iter().map(tag_of).collect::<Vec<_>>(), b);
                }
                QOp::Capacity(c) => {
                    let a: Vec<u32> = fast.set_capacity(*c).iter().map(tag_of).collect();
                    let b: Vec<u32> = slow.set_capacity(*c).iter().map(tag_of).collect();
                    prop_assert_eq!(a, b);
                }
            }
            prop_assert_eq!(fast.len(), slow.len());
        }
    }
}

// ---------------------------------------------------------------- RateLimiter

#[test]
fn ratelimiter_packet_rate_on_simulated_time() {
    // 10 pps, bucket 2: t=0 three packets (2 pass), t=100 ms one (+1 token,
    // passes), t=150 ms one (0.5 token, excess), t=300 ms three (2 pass).
    let at = [0, 0, 0, 100_000, 150_000, 300_000, 300_000, 300_000];
    let frames: Vec<_> = at
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, frame(i as u8 + 1, 0)))
        .collect();
    let inp = write_pcap(&frames);
    let (ok, over) = (tmp("ok.pcap"), tmp("over.pcap"));
    let r = run(
        &format!(
            "FromDump({}, TIMING true, STOP true) -> rl :: RateLimiter(10, BURST 2);
             rl[0] -> ToDump({}); rl[1] -> ToDump({});",
            inp.display(),
            ok.display(),
            over.display()
        ),
        sim(),
    );
    assert_eq!(tags(&ok), vec![1, 2, 4, 6, 7]);
    assert_eq!(tags(&over), vec![3, 5, 8]);
    assert_eq!(read(&r, "rl.passed"), "5");
    assert_eq!(read(&r, "rl.dropped"), "3");
    assert_eq!(read(&r, "rl.classes"), "0 5 3");
    assert_eq!(read(&r, "rl.rate"), "10");
    assert_eq!(read(&r, "rl.burst"), "2");
    r.handle().call("rl.rate", Some("5kpps")).unwrap();
    assert_eq!(read(&r, "rl.rate"), "5000");
    assert!(r.handle().call("rl.rate", Some("1Mbps")).is_err());
    r.handle().call("rl.burst", Some("7")).unwrap();
    assert_eq!(read(&r, "rl.burst"), "7");
    r.handle().call("rl.reset_counts", Some("")).unwrap();
    assert_eq!(read(&r, "rl.passed"), "0");
}

#[test]
fn ratelimiter_bandwidth_classes_and_unconnected_excess() {
    // 47-byte frames cost 376 bits; the bucket holds 100 bytes (800 bits):
    // two pass per class at once. PAINT 1 and 2 are classes 1 and 2.
    let frames: Vec<_> = (1..=6).map(|i| (0, frame(i, 0))).collect();
    let inp = write_pcap(&frames);
    let ok = tmp("ok.pcap");
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> rr :: RoundRobinSwitch;
             rr[0] -> Paint(1) -> rl :: RateLimiter(8kbps, BURST 100, ANNO PAINT, CLASSES 4);
             rr[1] -> Paint(2) -> rl;
             rl -> ToDump({});",
            inp.display(),
            ok.display()
        ),
        sim(),
    );
    assert_eq!(tags(&ok), vec![1, 3, 2, 4]);
    assert_eq!(read(&r, "rl.classes"), "1 2 1\n2 2 1");
    assert_eq!(read(&r, "rl.dropped"), "2");
    assert_eq!(read(&r, "rl.rate"), "8kbps");
    r.handle().call("rl.rate", Some("1.5Gbps")).unwrap();
    assert_eq!(read(&r, "rl.rate"), "1500Mbps");
    for bad in [
        "RateLimiter",
        "RateLimiter(fast)",
        "RateLimiter(10Mpps, ANNO PAINT, HASH true)",
        "RateLimiter(10, CLASSES 4)",
        "RateLimiter(10, HASH true, CLASSES 0)",
        "RateLimiter(10, BURST 0)",
        "RateLimiter(10, IMPL slow)",
    ] {
        let e = common::build(&format!("Idle -> {bad} -> Idle;"), RouterOptions::default());
        assert!(e.is_err(), "{bad}");
    }
}

fn rate_strategy() -> impl Strategy<Value = Rate> {
    prop_oneof![
        prop_oneof![0u64..20, 1u64..10_000_000].prop_map(|r| Rate {
            per_sec: r,
            unit: Unit::Packets
        }),
        // Up to the largest rate that parses (1.8e19 bit/s), where a
        // refill of a full bucket's worth nears 64 bits.
        prop_oneof![
            0u64..20_000,
            1u64..100_000_000_000,
            Just(17_999_999_999_999_999_999)
        ]
        .prop_map(|r| Rate {
            per_sec: r,
            unit: Unit::Bits
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn ratelimiter_fast_matches_reference(
        rate in rate_strategy(),
        burst in prop_oneof![1u64..10, 1u64..100_000, Just(u64::MAX / 1_000_000_000)],
        how in 0u8..3,
        classes in 1usize..6,
        batches in prop::collection::vec(
            (prop_oneof![0u64..3, 0u64..100_000_000, Just(u64::MAX / 2)],
             any::<bool>(),
             prop::collection::vec((1usize..1600, any::<u8>(), any::<u32>()), 0..70)),
            0..12),
        rate2 in rate_strategy(),
        burst2 in 1u64..10_000,
    ) {
        let how = match how {
            0 => Classify::Single,
            1 => Classify::Anno(AnnoInfo { offset: offsets::PAINT, size: 1 }),
            _ => Classify::Hash,
        };
        let classes = if matches!(how, Classify::Single) { 1 } else { classes };
        let mut fast = FastBuckets::new(rate, burst, classes);
        let mut slow = RefBuckets::new(rate, burst, classes);
        let mut now = 5u64;
        let mut id = 0u32;
        for (k, (dt, back, pkts)) in batches.iter().enumerate() {
            // Sometimes the round's time runs back (both count it as the
            // latest time seen).
            now = if *back { now.saturating_sub(*dt) } else { now.saturating_add(*dt).min(u64::MAX - 1) };
            if k == batches.len() / 2 && rate2.unit == rate.unit {
                fast.set_rate(rate2);
                slow.set_rate(rate2);
                fast.set_burst(burst2);
                slow.set_burst(burst2);
            }
            let mk = |id: &mut u32| -> Batch {
                pkts.iter().map(|&(len, paint, hash)| {
                    let mut d = vec![0u8; len.max(4)];
                    d[..4].copy_from_slice(&id.to_be_bytes());
                    *id += 1;
                    let mut p = Packet::from_slice(&d);
                    p.anno_mut().set_paint(paint);
                    p.anno_mut().flow_hash = hash;
                    p
                }).collect()
            };
            let start = id;
            let mut a = mk(&mut id);
            id = start;
            let mut b = mk(&mut id);
            let ax = fast.split(now, &mut a, how);
            let bx = slow.split(now, &mut b, how);
            prop_assert_eq!(a.iter().map(tag_of).collect::<Vec<_>>(), b.iter().map(tag_of).collect::<Vec<_>>());
            prop_assert_eq!(ax.iter().map(tag_of).collect::<Vec<_>>(), bx.iter().map(tag_of).collect::<Vec<_>>());
            prop_assert_eq!(&fast.counts().passed, &slow.counts.passed);
            prop_assert_eq!(&fast.counts().dropped, &slow.counts.dropped);
        }
    }
}

// ---------------------------------------------------------------- RSS

/// Microsoft's RSS verification suite (default key): source, destination,
/// source port, destination port, hash of the addresses, hash with ports.
const MS_V4: &[(&str, &str, u16, u16, u32, u32)] = &[
    (
        "66.9.149.187",
        "161.142.100.80",
        2794,
        1766,
        0x323e8fc2,
        0x51ccc178,
    ),
    (
        "199.92.111.2",
        "65.69.140.83",
        14230,
        4739,
        0xd718262a,
        0xc626b0ea,
    ),
    (
        "24.19.198.95",
        "12.22.207.184",
        12898,
        38024,
        0xd2d0a5de,
        0x5c2b394a,
    ),
    (
        "38.27.205.30",
        "209.142.163.6",
        48228,
        2217,
        0x82989176,
        0xafc7327f,
    ),
    (
        "153.39.163.191",
        "202.188.127.2",
        44251,
        1303,
        0x5d1809c5,
        0x10e828a2,
    ),
];
const MS_V6: &[(&str, &str, u16, u16, u32, u32)] = &[
    (
        "3ffe:2501:200:1fff::7",
        "3ffe:2501:200:3::1",
        2794,
        1766,
        0x2cc18cd5,
        0x40207d3d,
    ),
    (
        "3ffe:501:8::260:97ff:fe40:efab",
        "ff02::1",
        14230,
        4739,
        0x0f0c461c,
        0xdde51bbf,
    ),
    (
        "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
        "fe80::200:f8ff:fe21:67cf",
        44251,
        38024,
        0x4b61e985,
        0x02d1feef,
    ),
];

fn v4_frame(src: &str, dst: &str, sp: u16, dp: u16, proto: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8];
    f[12] = 0x08;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&28u16.to_be_bytes());
    f[22] = 64;
    f[23] = proto;
    f[26..30].copy_from_slice(&src.parse::<Ipv4Addr>().unwrap().octets());
    f[30..34].copy_from_slice(&dst.parse::<Ipv4Addr>().unwrap().octets());
    f[34..36].copy_from_slice(&sp.to_be_bytes());
    f[36..38].copy_from_slice(&dp.to_be_bytes());
    f
}

fn v6_frame(src: &str, dst: &str, sp: u16, dp: u16, proto: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 4 + 40 + 20];
    f[12..14].copy_from_slice(&[0x81, 0x00]); // one VLAN tag
    f[14..16].copy_from_slice(&[0x00, 0x07]);
    f[16..18].copy_from_slice(&[0x86, 0xdd]);
    let ip = &mut f[18..];
    ip[0] = 0x60;
    ip[4..6].copy_from_slice(&20u16.to_be_bytes());
    ip[6] = proto;
    ip[7] = 64;
    ip[8..24].copy_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
    ip[24..40].copy_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
    ip[40..42].copy_from_slice(&sp.to_be_bytes());
    ip[42..44].copy_from_slice(&dp.to_be_bytes());
    f
}

#[test]
fn toeplitz_passes_the_microsoft_verification_suite() {
    let t = Toeplitz::new(&MS_KEY);
    for &(s, d, sp, dp, h2, h4) in MS_V4 {
        let mut input = Vec::new();
        input.extend_from_slice(&s.parse::<Ipv4Addr>().unwrap().octets());
        input.extend_from_slice(&d.parse::<Ipv4Addr>().unwrap().octets());
        assert_eq!(toeplitz_reference(&MS_KEY, &input), h2, "{s} {d}");
        assert_eq!(t.hash(&input), h2, "{s} {d}");
        input.extend_from_slice(&sp.to_be_bytes());
        input.extend_from_slice(&dp.to_be_bytes());
        assert_eq!(toeplitz_reference(&MS_KEY, &input), h4, "{s} {d} ports");
        assert_eq!(t.hash(&input), h4, "{s} {d} ports");
    }
    for &(s, d, sp, dp, h2, h4) in MS_V6 {
        let mut input = Vec::new();
        input.extend_from_slice(&s.parse::<Ipv6Addr>().unwrap().octets());
        input.extend_from_slice(&d.parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(toeplitz_reference(&MS_KEY, &input), h2, "{s} {d}");
        assert_eq!(t.hash(&input), h2, "{s} {d}");
        input.extend_from_slice(&sp.to_be_bytes());
        input.extend_from_slice(&dp.to_be_bytes());
        assert_eq!(toeplitz_reference(&MS_KEY, &input), h4, "{s} {d} ports");
        assert_eq!(t.hash(&input), h4, "{s} {d} ports");
    }
}

/// Frames of the verification suite: TCP (ports hashed), ICMP (addresses
/// only), UDP over IPv6 behind a VLAN tag, and an ARP frame; the expected
/// hash of each (0 for ARP).
fn ms_frames() -> Vec<(Vec<u8>, u32)> {
    let mut v = Vec::new();
    for &(s, d, sp, dp, h2, h4) in MS_V4 {
        v.push((v4_frame(s, d, sp, dp, 6), h4));
        v.push((v4_frame(s, d, sp, dp, 1), h2));
    }
    for &(s, d, sp, dp, h2, h4) in MS_V6 {
        v.push((v6_frame(s, d, sp, dp, 17), h4));
        v.push((v6_frame(s, d, sp, dp, 59), h2));
    }
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    v.push((arp, 0));
    v
}

/// The `classes` lines RateLimiter(HASH true, CLASSES 65536) shows for
/// packets with these flow hashes.
fn low16_classes(hashes: impl Iterator<Item = u32>) -> String {
    let mut m = std::collections::BTreeMap::new();
    for h in hashes {
        *m.entry(h & 0xffff).or_insert(0u32) += 1;
    }
    m.iter()
        .map(|(c, n)| format!("{c} {n} 0"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn rss_sets_the_flow_hash_and_spreads_by_the_indirection_table() {
    let ms = ms_frames();
    let frames: Vec<_> = ms.iter().map(|(f, _)| (0, f.clone())).collect();
    let inp = write_pcap(&frames);
    for (imp, mark) in [
        ("fast", ""),
        ("reference", ""),
        ("fast", "-> MarkIPHeader(14)"),
    ] {
        let outs: Vec<PathBuf> = (0..4).map(|k| tmp(&format!("rss{k}.pcap"))).collect();
        let frames_in = if mark.is_empty() {
            ms.clone()
        } else {
            // MarkIPHeader only understands the IPv4 frames.
            ms.iter()
                .filter(|(f, _)| f[12..14] == [8, 0])
                .cloned()
                .collect()
        };
        let src = if mark.is_empty() {
            inp.clone()
        } else {
            write_pcap(
                &frames_in
                    .iter()
                    .map(|(f, _)| (0, f.clone()))
                    .collect::<Vec<_>>(),
            )
        };
        let r = run(
            &format!(
                "FromDump({}, STOP true) {mark} -> rss :: RSS(RETA 0 1 2 3 3 2 1 0, IMPL {imp});
                 {}
                 ",
                src.display(),
                (0..4)
                    .map(|k| format!(
                        "rss[{k}] -> rl{k} :: RateLimiter(1000000, HASH true, CLASSES 65536) -> ToDump({});",
                        outs[k].display()
                    ))
                    .collect::<String>()
            ),
            RouterOptions::default(),
        );
        let reta = [0, 1, 2, 3, 3, 2, 1, 0];
        for (k, out) in outs.iter().enumerate() {
            let want: Vec<&(Vec<u8>, u32)> = frames_in
                .iter()
                .filter(|(_, h)| reta[(*h & 7) as usize] == k)
                .collect();
            let got = frames_of(out);
            assert_eq!(got.len(), want.len(), "{imp}{mark} output {k}");
            for (g, (w, _)) in got.iter().zip(&want) {
                assert_eq!(g, w, "{imp}{mark} output {k}");
            }
            // ARP keeps its (zero) annotation: class 0.
            let hashes = want.iter().map(|(_, h)| *h);
            assert_eq!(
                read(&r, &format!("rl{k}.classes")),
                low16_classes(hashes),
                "{imp}{mark} output {k}"
            );
        }
        let unhashed = if mark.is_empty() { "1" } else { "0" };
        assert_eq!(read(&r, "rss.unhashed"), unhashed, "{imp}{mark}");
        assert_eq!(read(&r, "rss.count"), frames_in.len().to_string());
        assert_eq!(read(&r, "rss.reta"), "0 1 2 3 3 2 1 0");
        assert_eq!(
            read(&r, "rss.key"),
            "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
        );
        r.handle().call("rss.reta", Some("3 3")).unwrap();
        assert_eq!(read(&r, "rss.reta"), "3 3");
        assert!(r.handle().call("rss.reta", Some("0 1 2")).is_err());
        assert!(r.handle().call("rss.reta", Some("4 4")).is_err());
    }
}

#[test]
fn rss_default_table_and_bad_arguments() {
    let r = common::build(
        "Idle -> rss :: RSS; rss[0] -> Discard; rss[1] -> Discard; rss[2] -> Discard;",
        RouterOptions::default(),
    )
    .unwrap();
    let want: Vec<String> = (0..128).map(|i| (i % 3).to_string()).collect();
    assert_eq!(read(&r, "rss.reta"), want.join(" "));
    for bad in [
        "RSS(KEY 6d5a)",
        "RSS(KEY zz)",
        "RSS(RETA 0 1 2)",
        "RSS(RETA 0 5)",
        "RSS(IMPL slow)",
    ] {
        let e = common::build(
            &format!("Idle -> {bad} -> Discard;"),
            RouterOptions::default(),
        );
        assert!(e.is_err(), "{bad}");
    }
}

/// Random frames around the shapes RSS parses: Ethernet with 0-3 VLAN
/// tags, IPv4 (random header length, fragments, protocols), IPv6, ARP,
/// all possibly truncated.
fn rss_frame() -> impl Strategy<Value = (Vec<u8>, Option<(u8, u8, u8)>)> {
    (
        0usize..4,
        prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x0806), any::<u16>()],
        any::<u8>(),
        prop_oneof![Just(6u8), Just(17), Just(1), Just(59), any::<u8>()],
        any::<u16>(),
        prop::collection::vec(any::<u8>(), 80),
        0usize..96,
        prop::option::of((0u8..30, 0u8..60, any::<u8>())),
    )
        .prop_map(|(tags, et, b0, proto, frag, rand, cut, anno)| {
            let mut f = vec![0u8; 12];
            for _ in 0..tags {
                f.extend_from_slice(&[0x81, 0x00, 0, 1]);
            }
            f.extend_from_slice(&et.to_be_bytes());
            let mut ip = rand;
            match et {
                0x0800 => {
                    ip[0] = if b0 & 1 == 0 { 0x45 } else { b0 };
                    ip[6..8].copy_from_slice(
                        &(frag & 0xbfff & if b0 & 2 == 0 { 0 } else { 0xffff }).to_be_bytes(),
                    );
                    ip[9] = proto;
                }
                0x86dd => {
                    ip[0] = if b0 & 1 == 0 { 0x60 } else { b0 };
                    ip[6] = proto;
                }
                _ => {}
            }
            f.extend_from_slice(&ip);
            f.truncate(cut.max(1));
            (f, anno)
        })
}

fn packet_of(f: &[u8], anno: Option<(u8, u8, u8)>) -> Packet {
    let mut p = Packet::from_slice(f);
    if let Some((nh, th, proto)) = anno {
        p.set_network_header(nh as isize);
        if th >= nh && th % 3 != 0 {
            p.set_transport_header(th as isize);
        }
        if proto % 2 == 0 {
            p.anno_mut().set_u8(offsets::L4_PROTO, proto);
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn rss_fast_input_and_hash_match_the_reference(
        frames in prop::collection::vec(rss_frame(), 1..20),
        key in prop::collection::vec(any::<u8>(), 40),
    ) {
        let t = Toeplitz::new(&key);
        for (f, anno) in &frames {
            let p = packet_of(f, *anno);
            let want = input_reference(&p);
            let want = (!want.bytes().is_empty()).then(|| toeplitz_reference(&key, want.bytes()));
            prop_assert_eq!(hash_fast(&t, &p), want);
        }
    }
}

// ------------------------------------------------- element-level differential

/// The frames each output file received, and the handler values.
type Outcome = (Vec<Vec<Vec<u8>>>, Vec<String>);

/// Run `conf` (with `{IMPL}` in it) with both implementations on `frames`;
/// every `{OUTk}` becomes a ToDump file. Returns the output files' frames
/// and the handler values, for each implementation.
fn run_both(conf: &str, frames: &[Vec<u8>], outputs: usize, handlers: &[&str]) -> [Outcome; 2] {
    let inp = write_pcap(&frames.iter().map(|f| (0, f.clone())).collect::<Vec<_>>());
    ["fast", "reference"].map(|imp| {
        let outs: Vec<PathBuf> = (0..outputs).map(|k| tmp(&format!("o{k}.pcap"))).collect();
        let mut text = conf
            .replace("{IN}", &inp.display().to_string())
            .replace("{IMPL}", imp);
        for (k, o) in outs.iter().enumerate() {
            text = text.replace(&format!("{{OUT{k}}}"), &o.display().to_string());
        }
        let r = run(&text, sim());
        let files = outs.iter().map(|o| frames_of(o)).collect();
        let hv = handlers.iter().map(|h| read(&r, h)).collect();
        (files, hv)
    })
}

fn any_frames() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(rss_frame().prop_map(|(f, _)| f), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn elements_match_their_reference_in_a_router(
        frames in any_frames(),
        cap in 1u32..40,
        off in 0u32..60,
        len in 1u32..5,
        burst in 1u32..20,
        rate in prop_oneof![Just("3".to_string()), Just("100kbps".to_string()), Just("1Gpps".to_string())],
        rburst in 1u32..3000,
        reta in prop::collection::vec(0u8..3, 1..5),
    ) {
        let reta_n = 1usize << (reta.len() - 1);
        let reta_s: Vec<String> = (0..reta_n).map(|i| reta[i % reta.len()].to_string()).collect();
        let conf = format!(
            "FromDump({{IN}}, STOP true, BURST {burst}) -> rss :: RSS(RETA {}, IMPL {{IMPL}});
             rss[0] -> q :: SRPrioQueue({cap}, OFFSET {off}, LENGTH {len}, IMPL {{IMPL}})
                    -> Unqueue(BURST {burst}) -> ToDump({{OUT0}});
             q[1] -> ToDump({{OUT1}});
             rss[1] -> rl :: RateLimiter({rate}, BURST {rburst}, HASH true, CLASSES 3, IMPL {{IMPL}});
             rl[0] -> ToDump({{OUT2}}); rl[1] -> ToDump({{OUT3}});
             rss[2] -> rl2 :: RateLimiter({rate}, BURST {rburst}, IMPL {{IMPL}}) -> ToDump({{OUT4}});",
            reta_s.join(" ")
        );
        let hs = ["rss.count", "rss.unhashed", "q.length", "q.drops", "q.short",
                  "q.highwater_length", "rl.passed", "rl.dropped", "rl.classes",
                  "rl2.passed", "rl2.dropped"];
        let [a, b] = run_both(&conf, &frames, 5, &hs);
        prop_assert_eq!(a, b);
    }
}
