//! HashTCAM (tuple space search over 5-tuples) in Click's test style:
//! literal rules, packets and expected outputs and handler values, and
//! differential property tests: the hash tables and the linear rule scan
//! (`IMPL reference`) agree on random rules, inserts, deletes and keys,
//! with and without the exact-match cache (lookups between inserts and
//! deletes, so that stale lines would show).

mod common;

use common::{build, read, run_outputs};
use linerate_elements::tables::hashtcam::{Rule, Tcam};
use linerate_io::pcap::LinkType;
use linerate_runtime::flow::{map_v4, FlowKey};
use linerate_runtime::{Router, RouterOptions};
use proptest::prelude::*;
use std::path::PathBuf;

fn write(r: &Router, h: &str, v: &str) -> Result<String, String> {
    r.handle().call(h, Some(v))
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-tcam-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An Ethernet frame with an IPv4 or IPv6 header and a TCP/UDP port pair.
fn frame(k: &FlowKey) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    if k.version == 4 {
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 28, 0, 1, 0, 0, 64, k.proto, 0, 0]);
        f.extend_from_slice(&k.src[12..]);
        f.extend_from_slice(&k.dst[12..]);
    } else {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 8, k.proto, 64]);
        f.extend_from_slice(&k.src);
        f.extend_from_slice(&k.dst);
    }
    f.extend_from_slice(&k.sport.to_be_bytes());
    f.extend_from_slice(&k.dport.to_be_bytes());
    f.extend_from_slice(&[0, 8, 0, 0]);
    f
}

fn key4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, proto: u8) -> FlowKey {
    FlowKey {
        src: map_v4(src),
        dst: map_v4(dst),
        sport,
        dport,
        proto,
        version: 4,
    }
}

fn key6(src: &str, dst: &str, sport: u16, dport: u16, proto: u8) -> FlowKey {
    let a = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
    FlowKey {
        src: a(src),
        dst: a(dst),
        sport,
        dport,
        proto,
        version: 6,
    }
}

/// Run `HashTCAM(config)` with `n` outputs on `pkts`; the packet count of
/// every output, and the router.
fn run_tcam(config: &str, n: usize, pkts: &[Vec<u8>], name: &str) -> (Router, Vec<String>) {
    run_tcam_burst(config, n, pkts, name, 64)
}

/// `run_tcam` with `burst` packets a batch.
fn run_tcam_burst(
    config: &str,
    n: usize,
    pkts: &[Vec<u8>],
    name: &str,
    burst: usize,
) -> (Router, Vec<String>) {
    let decl = format!("t :: HashTCAM({config})");
    run_outputs(LinkType::ETHERNET, pkts, burst, &decl, n, name)
}

const RULES: &str = "100 0 dst 10.0.0.0/8 dport 80 proto 6, \
     50 1 src 192.168.0.0/16, \
     10 2 dport 1024-65535, \
     60 3 dst 2001:db8::/32 proto 17, \
     50 2 src 192.168.1.0/24";

#[test]
fn packets_take_the_highest_priority_match() {
    let pkts: Vec<Vec<u8>> = [
        key4([192, 168, 1, 1], [10, 1, 1, 1], 5000, 80, 6), // 100 -> 0
        key4([192, 168, 1, 1], [11, 1, 1, 1], 5000, 80, 6), // both 50s: first inserted -> 1
        key4([1, 1, 1, 1], [11, 1, 1, 1], 5000, 2000, 17),  // 10 -> 2
        key4([1, 1, 1, 1], [11, 1, 1, 1], 5000, 1023, 17),  // no match
        key6("2001:db8::1", "2001:db8::2", 1, 2000, 17),    // 60 -> 3
        key6("2001:db8::1", "2001:db9::2", 1, 2000, 17),    // 10 -> 2
    ]
    .iter()
    .map(frame)
    .chain([vec![0u8; 20], {
        let mut f = frame(&key4([1; 4], [2; 4], 1, 2, 6));
        f[14] = 0x75; // version 7
        f
    }])
    .collect();
    let (r, counts) = run_tcam(&format!("{RULES}, OFFSET 14"), 4, &pkts, "literal");
    assert_eq!(counts, ["1", "1", "2", "1"]);
    assert_eq!(read(&r, "t.lookups"), "8");
    assert_eq!(read(&r, "t.misses"), "1");
    assert_eq!(read(&r, "t.bad"), "2");
    assert_eq!(read(&r, "t.count"), "5");
    // Masks: dst/8+dport+proto, src/16, 6 for the range 1024-65535,
    // dst/32+proto, src/24.
    assert_eq!(read(&r, "t.masks"), "10");
}

/// Malformed frames for `OFFSET 14`: empty, one byte, Ethernet only, IPv4
/// truncated, IPv4 with a header length (IHL) of 4 and of 0 words,
/// version 7, IPv6 truncated, garbage.
fn malformed() -> Vec<Vec<u8>> {
    let f4 = frame(&key4([10, 1, 1, 1], [10, 1, 1, 2], 1, 80, 6));
    let f6 = frame(&key6("2001:db8::1", "2001:db8::2", 1, 2000, 17));
    let with = |f: &[u8], b: u8| {
        let mut f = f.to_vec();
        f[14] = b;
        f
    };
    vec![
        vec![],
        vec![0x45],
        f4[..14].to_vec(),
        f4[..33].to_vec(),
        with(&f4, 0x44),
        with(&f4, 0x40),
        with(&f4, 0x75),
        f6[..53].to_vec(),
        vec![0xff; 64],
    ]
}

#[test]
fn bad_packets_leave_on_bad_output() {
    // One packet to each output 0 (rule 100), 2 (rule 10), one matching no
    // rule, then the malformed frames, which leave on output 3.
    let mut pkts: Vec<Vec<u8>> = [
        key4([192, 168, 1, 1], [10, 1, 1, 1], 5000, 80, 6),
        key4([1, 1, 1, 1], [11, 1, 1, 1], 5000, 2000, 17),
        key4([1, 1, 1, 1], [11, 1, 1, 1], 5000, 1023, 17),
    ]
    .iter()
    .map(frame)
    .collect();
    pkts.extend(malformed());
    for imp in ["IMPL fast", "IMPL fast, CACHE 0", "IMPL reference"] {
        for burst in [1, 4, 64] {
            let cfg = format!("{RULES}, OFFSET 14, BAD_OUTPUT 3, {imp}");
            let (r, counts) = run_tcam_burst(&cfg, 4, &pkts, &format!("bad{burst}"), burst);
            assert_eq!(counts, ["1", "0", "1", "9"], "{imp} burst {burst}");
            assert_eq!(read(&r, "t.bad"), "9", "{imp} burst {burst}");
            assert_eq!(read(&r, "t.misses"), "1", "{imp} burst {burst}");
            assert_eq!(read(&r, "t.lookups"), "12", "{imp} burst {burst}");
            // Without BAD_OUTPUT they are dropped, still counted.
            let cfg = format!("{RULES}, OFFSET 14, {imp}");
            let (r, counts) = run_tcam_burst(&cfg, 4, &pkts, &format!("drop{burst}"), burst);
            assert_eq!(counts, ["1", "0", "1", "0"], "{imp} burst {burst}");
            assert_eq!(read(&r, "t.bad"), "9");
            assert_eq!(read(&r, "t.misses"), "1");
        }
        // Only bad packets, and BAD_OUTPUT an output rules use too.
        let cfg = format!("{RULES}, OFFSET 14, BAD_OUTPUT 0, {imp}");
        let (r, counts) = run_tcam(&cfg, 4, &malformed(), "allbad");
        assert_eq!(counts, ["9", "0", "0", "0"], "{imp}");
        assert_eq!(read(&r, "t.bad"), "9");
        assert_eq!(read(&r, "t.misses"), "0");
    }
    let e = build(
        "Idle -> t :: HashTCAM(1 0, BAD_OUTPUT 1) -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .expect("BAD_OUTPUT 1 of 1 output must fail");
    assert!(e.contains("BAD_OUTPUT: output 1 out of range"), "{e}");
}

#[test]
fn rules_insert_and_delete_handlers() {
    let r = build(
        &format!("Idle -> t :: HashTCAM({RULES}); t[0] -> Discard; t[1] -> Discard; t[2] -> Discard; t[3] -> Discard;"),
        RouterOptions::default(),
    )
    .unwrap();
    assert_eq!(
        read(&r, "t.rules"),
        "100 0 dst 10.0.0.0/8 dport 80 proto 6\n\
         50 1 src 192.168.0.0/16\n\
         10 2 dport 1024-65535\n\
         60 3 dst 2001:db8::/32 proto 17\n\
         50 2 src 192.168.1.0/24"
    );
    assert_eq!(
        write(&r, "t.insert", "50 1 src 192.168.0.0/16").unwrap_err(),
        "rule '50 1 src 192.168.0.0/16' exists"
    );
    write(&r, "t.insert", "7 1 sport 0x50/0xfff0 proto 6/0xfe").unwrap();
    assert_eq!(read(&r, "t.count"), "6");
    write(&r, "t.delete", "10 2 dport 1024-65535").unwrap();
    assert_eq!(read(&r, "t.masks"), "5");
    assert_eq!(
        write(&r, "t.delete", "10 2 dport 1024-65535").unwrap_err(),
        "rule '10 2 dport 1024-65535' not found"
    );
    assert_eq!(
        write(&r, "t.insert", "1 9 dport 80").unwrap_err(),
        "output 9 out of range"
    );
    assert_eq!(
        write(&r, "t.insert", "1 0 colour red").unwrap_err(),
        "unknown field 'colour'"
    );
    assert_eq!(
        write(&r, "t.insert", "1 0 dport 90-80").unwrap_err(),
        "bad dport '90-80'"
    );
    assert!(read(&r, "t.rules").ends_with("7 1 sport 0x50/0xfff0 proto 6/254"));
    let e = build(
        "Idle -> t :: HashTCAM(1 0 src nowhere); t[0] -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("rule 1: bad src 'nowhere'"), "{e}");
    let d = tmpdir("file");
    let f = d.join("rules.txt");
    std::fs::write(
        &f,
        "# acl\n5 1 dport 22\n\n// x\n5 0 dport 22\n5 0 dport 22\n",
    )
    .unwrap();
    let text = format!(
        "Idle -> t :: HashTCAM(9 0 proto 1, FILE {}); t[0] -> Discard; t[1] -> Discard;",
        f.display()
    );
    let e = build(&text, RouterOptions::default()).err().unwrap();
    assert!(e.contains("rules.txt:6: rule '5 0 dport 22' exists"), "{e}");
    std::fs::write(&f, "# acl\n5 1 dport 22\n\n// x\n5 0 dport 22\n").unwrap();
    let r = build(&text, RouterOptions::default()).unwrap();
    assert_eq!(
        read(&r, "t.rules"),
        "9 0 proto 1\n5 1 dport 22\n5 0 dport 22"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn cache_hits_and_invalidation() {
    // Each key three times, a batch of three each time: the first lookup
    // of a key misses the cache, the next two hit it.
    let keys = [
        key4([192, 168, 1, 1], [10, 1, 1, 1], 5000, 80, 6),
        key4([1, 1, 1, 1], [11, 1, 1, 1], 5000, 2000, 17),
        key4([1, 1, 1, 1], [11, 1, 1, 1], 5000, 1023, 17),
    ];
    let pkts: Vec<Vec<u8>> = (0..3).flat_map(|_| keys.iter().map(frame)).collect();
    let (r, counts) = run_tcam_burst(&format!("{RULES}, OFFSET 14"), 4, &pkts, "cache", 3);
    assert_eq!(counts, ["3", "0", "3", "0"]);
    assert_eq!(read(&r, "t.misses"), "3");
    assert_eq!(read(&r, "t.cache_hits"), "6");
    assert_eq!(read(&r, "t.cache_hit_rate"), "66.7");
    let (r, counts) = run_tcam_burst(
        &format!("{RULES}, OFFSET 14, CACHE 0"),
        4,
        &pkts,
        "nocache",
        3,
    );
    assert_eq!(counts, ["3", "0", "3", "0"]);
    assert_eq!(read(&r, "t.cache_hits"), "0");
    assert_eq!(read(&r, "t.cache_hit_rate"), "0.0");
    // A cached answer (a miss, then a match) goes stale with every insert
    // and delete.
    let mut t = Tcam::with_cache(false, 64);
    let k = key4([1, 1, 1, 1], [2, 2, 2, 2], 3, 4, 6);
    assert_eq!(t.lookup(&k), None);
    t.insert(Rule::parse("1 0 dport 4").unwrap()).unwrap();
    assert_eq!(t.lookup(&k), Some(0));
    t.insert(Rule::parse("2 1 src 1.1.1.0/24").unwrap())
        .unwrap();
    assert_eq!(t.lookup(&k), Some(1));
    t.delete(&Rule::parse("2 1 src 1.1.1.0/24").unwrap())
        .unwrap();
    assert_eq!(t.lookup(&k), Some(0));
    assert_eq!(t.cache_stats(), (0, 4));
    assert_eq!(t.lookup(&k), Some(0));
    assert_eq!(t.cache_stats(), (1, 5));
}

#[test]
fn a_thrashing_cache_keeps_some_keys() {
    // 512 keys round-robin through 16 lines (two 8-way buckets): with every
    // miss cached, each key's line is replaced before the key recurs and
    // nothing ever hits. Once a window of fills has shown that, only one
    // miss in 16 is cached, and those lines live to be hit.
    let mut t = Tcam::with_cache(false, 16);
    // The cache key is the key under the union of the masks: the second
    // rule makes it hold the source port, which tells the keys apart.
    t.insert(Rule::parse("1 2").unwrap()).unwrap();
    t.insert(Rule::parse("2 1 sport 0").unwrap()).unwrap();
    let keys: Vec<FlowKey> = (0..512u16)
        .map(|i| key4([10, 0, 0, 1], [20, 0, 0, 1], i, 80, 17))
        .collect();
    let want = |k: &FlowKey| Some(if k.sport == 0 { 1 } else { 2 });
    for _ in 0..4 {
        for k in &keys {
            assert_eq!(t.lookup(k), want(k));
        }
    }
    let (h0, n0) = t.cache_stats();
    for _ in 0..16 {
        for k in &keys {
            assert_eq!(t.lookup(k), want(k));
        }
    }
    let (h1, n1) = t.cache_stats();
    let rate = (h1 - h0) as f64 / (n1 - n0) as f64;
    assert!(rate > 0.005, "hit rate {rate} in the thrashing phase");
}

#[test]
fn port_ranges_expand_exactly() {
    for (lo, hi) in [
        (0u16, 65535u16),
        (1024, 65535),
        (80, 80),
        (1, 6),
        (1000, 2000),
        (0, 0),
    ] {
        let mut t = Tcam::new(false);
        t.insert(Rule::parse(&format!("1 0 dport {lo}-{hi}")).unwrap())
            .unwrap();
        for p in [
            0u16, 1, 5, 6, 7, 79, 80, 81, 999, 1000, 1023, 1024, 2000, 2001, 65535,
        ] {
            let k = key4([1; 4], [2; 4], 0, p, 6);
            assert_eq!(
                t.lookup(&k).is_some(),
                (lo..=hi).contains(&p),
                "{lo}-{hi} {p}"
            );
        }
    }
}

// ---------------------------------------------------------------------
// Differential property tests.

fn rule_strategy() -> impl Strategy<Value = String> {
    let src = prop_oneof![
        Just(String::new()),
        Just(" src 10.0.0.0/8".to_string()),
        Just(" src 10.1.0.0/16".to_string()),
        Just(" src 10.1.2.3".to_string()),
        Just(" src 2001:db8::/32".to_string()),
    ];
    let dst = prop_oneof![
        Just(String::new()),
        Just(" dst 20.0.0.0/8".to_string()),
        Just(" dst 20.2.0.0/15".to_string()),
        Just(" dst 2001:db8:1::/48".to_string()),
        Just(" dst any".to_string()),
    ];
    let port = |kw: &'static str| {
        prop_oneof![
            Just(String::new()),
            (0u16..8).prop_map(move |p| format!(" {kw} {p}")),
            (0u16..8, 0u16..8).prop_map(move |(a, b)| format!(" {kw} {}-{}", a.min(b), a.max(b))),
            (0u16..8).prop_map(move |p| format!(" {kw} {p}/6")),
        ]
    };
    let proto = prop_oneof![
        Just(String::new()),
        Just(" proto 6".to_string()),
        Just(" proto 17/0xfe".to_string())
    ];
    (
        0u32..6,
        0u32..3,
        src,
        dst,
        port("sport"),
        port("dport"),
        proto,
    )
        .prop_map(|(pr, out, s, d, sp, dp, p)| format!("{pr} {out}{s}{d}{sp}{dp}{p}"))
}

fn key_strategy() -> impl Strategy<Value = FlowKey> {
    let a4 = prop_oneof![
        Just([10, 1, 2, 3]),
        Just([10, 9, 0, 1]),
        Just([20, 2, 0, 1]),
        Just([20, 3, 9, 9]),
        any::<[u8; 4]>()
    ];
    let a6 = prop_oneof![
        Just("2001:db8::1"),
        Just("2001:db8:1::1"),
        Just("2001:db9::1")
    ];
    (
        any::<bool>(),
        a4.clone(),
        a4,
        a6.clone(),
        a6,
        0u16..9,
        0u16..9,
        prop_oneof![Just(6u8), Just(17), Just(16), Just(1)],
    )
        .prop_map(|(v6, s4, d4, s6, d6, sp, dp, pr)| {
            if v6 {
                key6(s6, d6, sp, dp, pr)
            } else {
                key4(s4, d4, sp, dp, pr)
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn hash_tables_and_linear_scan_agree(
        ops in prop::collection::vec((rule_strategy(), 0u8..4), 1..60),
        keys in prop::collection::vec(key_strategy(), 1..40),
    ) {
        let mut fast = Tcam::new(false);
        let mut slow = Tcam::new(true);
        for (text, op) in &ops {
            let r = Rule::parse(text).unwrap();
            if *op == 0 {
                prop_assert_eq!(fast.delete(&r), slow.delete(&r));
            } else {
                prop_assert_eq!(fast.insert(r), slow.insert(r));
            }
            prop_assert!(fast.masks() <= 4 * 5 * 5 * 3 * 3 * 3 * 3);
        }
        prop_assert_eq!(fast.rules().collect::<Vec<_>>(), slow.rules().collect::<Vec<_>>());
        for k in &keys {
            prop_assert_eq!(fast.lookup(k), slow.lookup(k), "{:?}", k);
        }
    }
}

/// A lookup of `keys`, or a rule inserted or deleted.
#[derive(Debug, Clone)]
enum Op {
    Insert(String),
    Delete(String),
    Lookup(Vec<FlowKey>),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    // Priorities from a wide range as well as the narrow one (ties), so
    // that the tables' bounds differ and the search stops early.
    let rule = || {
        (rule_strategy(), prop::option::of(0u32..1000)).prop_map(|(r, p)| match p {
            Some(p) => format!("{p} {}", r.split_once(' ').map_or("", |x| x.1)),
            None => r,
        })
    };
    prop_oneof![
        3 => rule().prop_map(Op::Insert),
        1 => rule().prop_map(Op::Delete),
        2 => prop::collection::vec(key_strategy(), 1..24).prop_map(Op::Lookup),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Lookups between inserts and deletes, in batches with repeated keys,
    /// through caches of one bucket (lines evicted all the time), of a few
    /// and of none, against the linear scan.
    #[test]
    fn cached_tables_and_linear_scan_agree(
        ops in prop::collection::vec(op_strategy(), 1..60),
        lines in prop_oneof![Just(0usize), Just(1), Just(8), Just(64)],
    ) {
        let mut fast = Tcam::with_cache(false, lines);
        let mut slow = Tcam::new(true);
        let mut hits = 0;
        for op in &ops {
            match op {
                Op::Insert(text) => {
                    let r = Rule::parse(text).unwrap();
                    prop_assert_eq!(fast.insert(r), slow.insert(r));
                }
                Op::Delete(text) => {
                    let r = Rule::parse(text).unwrap();
                    prop_assert_eq!(fast.delete(&r), slow.delete(&r));
                }
                Op::Lookup(keys) => {
                    let twice: Vec<FlowKey> = keys.iter().chain(keys).copied().collect();
                    prop_assert_eq!(fast.lookup_many(&twice), slow.lookup_many(&twice));
                    for k in keys {
                        prop_assert_eq!(fast.lookup(k), slow.lookup(k), "{:?}", k);
                    }
                    hits = fast.cache_stats().0;
                }
            }
        }
        prop_assert_eq!(fast.rules().collect::<Vec<_>>(), slow.rules().collect::<Vec<_>>());
        if lines == 0 {
            prop_assert_eq!(hits, 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    fn fast_and_reference_elements_forward_identically(
        rules in prop::collection::vec(rule_strategy(), 1..20),
        keys in prop::collection::vec(key_strategy(), 1..40),
        junk in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..4),
        cache in prop_oneof![Just(""), Just(", CACHE 0"), Just(", CACHE 8")],
        bad_out in prop::option::of(0usize..3),
    ) {
        // Distinct rules: different texts can be one rule ("dst any" and
        // no dst, "sport 3/6" and "sport 2/6"), which HashTCAM refuses
        // twice (a CI run drew such a pair).
        let mut cfg: Vec<String> = Vec::new();
        let mut seen: Vec<Rule> = Vec::new();
        for text in rules {
            let r = Rule::parse(&text).unwrap();
            if !seen.contains(&r) {
                seen.push(r);
                cfg.push(text);
            }
        }
        let mut cfg = cfg.join(", ");
        if let Some(b) = bad_out {
            cfg.push_str(&format!(", BAD_OUTPUT {b}"));
        }
        // Every key twice, so that the cache answers the second time.
        let pkts: Vec<Vec<u8>> = keys
            .iter()
            .chain(&keys)
            .map(frame)
            .chain(junk)
            .chain(malformed())
            .collect();
        let (rf, cf) = run_tcam_burst(&format!("{cfg}, OFFSET 14{cache}"), 3, &pkts, "pf", 5);
        let (rr, cr) = run_tcam(&format!("{cfg}, OFFSET 14, IMPL reference"), 3, &pkts, "pr");
        prop_assert_eq!(cf, cr);
        for h in ["rules", "count", "lookups", "misses", "bad"] {
            prop_assert_eq!(read(&rf, &format!("t.{h}")), read(&rr, &format!("t.{h}")), "{}", h);
        }
    }
}
