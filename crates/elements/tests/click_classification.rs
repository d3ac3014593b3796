//! Classifier, IPClassifier and IPFilter: Click's pattern semantics on
//! literal packets, error messages, run-time rule replacement, and a
//! differential test of the compiled classifier against a linear matcher.

mod common;

use common::config;
use linerate_elements::classification::compile::{
    compile_ip_rules, linear_match, parse::parse_pattern, Classifier, DecisionCache, PacketView,
};
use linerate_runtime::{Router, RouterOptions};
use proptest::prelude::*;

fn build(text: &str) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let c = config(&reg, text);
    Router::build(&c, &reg, RouterOptions::default()).map_err(|d| d.to_string())
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim_end().to_string()
}

/// An IPv4 packet: 20-byte header (no options) plus `l4` bytes.
#[allow(clippy::too_many_arguments)]
fn ip(src: [u8; 4], dst: [u8; 4], proto: u8, tos: u8, ttl: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0x45, tos];
    p.extend_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 1]);
    p.extend_from_slice(&frag.to_be_bytes());
    p.extend_from_slice(&[ttl, proto, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(l4);
    p
}

fn tcp(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0; 8]);
    t.extend_from_slice(&[0x50, flags, 0x10, 0]);
    t.extend_from_slice(&[0; 4]);
    t
}

fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 8, 0, 0]);
    t
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [192, 168, 1, 2];

/// The index of the first pattern matching `pkt` (IPClassifier semantics).
fn classify(patterns: &[&str], pkt: &[u8]) -> Option<usize> {
    let exprs: Vec<_> = patterns
        .iter()
        .map(|p| parse_pattern(p).unwrap_or_else(|e| panic!("{p}: {e:?}")))
        .collect();
    let v = PacketView::ip(pkt);
    let lin = linear_match(&exprs, &v);
    assert_eq!(
        Classifier::new(exprs).lookup(&v),
        lin,
        "compiled vs linear on {patterns:?}"
    );
    lin
}

fn matches(pattern: &str, pkt: &[u8]) -> bool {
    classify(&[pattern], pkt) == Some(0)
}

#[test]
fn hosts_nets_and_qualifiers() {
    let p = ip(A, B, 6, 0, 64, 0, &tcp(1234, 80, 0x02));
    assert!(matches("src host 10.0.0.1", &p));
    assert!(!matches("dst host 10.0.0.1", &p));
    assert!(matches("host 10.0.0.1", &p));
    assert!(matches("src or dst host 192.168.1.2", &p));
    assert!(!matches("src and dst host 10.0.0.1", &p));
    assert!(matches("10.0.0.0/8", &p));
    assert!(matches("dst net 192.168.0.0 mask 255.255.0.0", &p));
    assert!(matches("src net 10.0.0.0/8 and dst net 192.168.1.0/24", &p));
    assert!(matches("src host != 10.0.0.2", &p));
    assert!(!matches("src host != 10.0.0.1", &p));
    assert!(matches("src host & 0xff0000ff 10.9.9.1", &p));
}

#[test]
fn ports_protocols_and_implied_qualifiers() {
    let t = ip(A, B, 6, 0, 64, 0, &tcp(1234, 80, 0x12));
    let u = ip(A, B, 17, 0, 64, 0, &udp(53, 5353));
    assert!(matches("tcp", &t) && !matches("tcp", &u));
    assert!(matches("ip proto 17", &u) && matches("udp", &u));
    assert!(matches("ip proto tcp", &t));
    assert!(matches("dst port www", &t) && matches("www", &t));
    assert!(matches("src port 80 or 1234", &t));
    assert!(matches("dst tcp port 8000 or 80", &t));
    assert!(!matches("dst udp port 80", &t));
    assert!(matches("src udp port domain", &u));
    assert!(matches("dst port > 1023", &u) && !matches("dst port > 1023", &t));
    assert!(matches("dst port >= 80 and dst port <= 80", &t));
    assert!(matches("src port < 1024", &u));
    assert!(matches("src tcp port != 5", &t));
    // 'src tcp port != 5' does not match non-TCP packets; '!(src tcp port 5)' does.
    assert!(!matches("src tcp port != 5", &u));
    assert!(matches("!(src tcp port 5)", &u));
    assert!(matches("src port & 0xff00 == 0x400", &t));
    assert!(matches("tcp opt syn", &t) && matches("syn ack", &t) && !matches("fin", &t));
    assert!(matches("tcp win 4096", &t));
    assert!(matches("ip proto < 10", &t) && !matches("ip proto > 10", &t));
}

#[test]
fn ip_fields_fragments_and_icmp() {
    let p = ip(A, B, 6, 0xb9, 64, 0, &tcp(1, 2, 0));
    assert!(matches("ip tos 185", &p) && matches("ip dscp 46", &p));
    assert!(matches("ip ect", &p) && !matches("ip ce", &p));
    assert!(matches("ip ttl 64", &p) && matches("ip ttl > 63", &p) && !matches("ip ttl < 64", &p));
    assert!(matches("ip vers 4", &p) && matches("ip hl 5", &p));
    assert!(matches("ip unfrag", &p) && matches("unfrag", &p) && !matches("ip frag", &p));
    assert!(matches("ip[8] 64", &p) && matches("ip[12:4] 0x0a000001", &p));
    assert!(matches("transp[13] & 2 == 0", &p));
    assert!(matches("tcp[0:2] 1", &p));
    // A later fragment: fragment tests match, port tests never do.
    let f = ip(A, B, 17, 0, 64, 100, &udp(53, 53));
    assert!(matches("ip frag", &f));
    assert!(!matches("udp port 53", &f));
    assert!(!matches("src udp port != 53", &f));
    assert!(matches("not src port 53", &f));
    let mut echo = vec![8, 0, 0, 0, 0, 1, 0, 1];
    let e = ip(A, B, 1, 0, 64, 0, &echo);
    assert!(matches("icmp type echo", &e) && matches("icmp type 8", &e));
    assert!(!matches("icmp type echo-reply", &e) && matches("icmp type != 0", &e));
    assert!(!matches("icmp type != 0", &p));
    echo[0] = 0;
    assert!(matches(
        "icmp type echo-reply",
        &ip(A, B, 1, 0, 64, 0, &echo)
    ));
}

#[test]
fn connectives_constants_and_first_match() {
    let p = ip(A, B, 6, 0, 64, 0, &tcp(1234, 80, 0x02));
    assert!(matches("tcp && ! udp", &p));
    assert!(matches("udp || (tcp and dst port 80)", &p));
    assert!(matches("udp ? false : true", &p));
    assert!(matches("tcp ? dst port 80 : false", &p));
    assert!(matches("true", &p) && !matches("false", &p));
    assert!(matches("-", &p) && matches("any", &p) && matches("all", &p));
    assert!(matches("not not tcp", &p));
    assert_eq!(
        classify(&["udp", "src host 10.0.0.1", "tcp", "-"], &p),
        Some(1)
    );
    assert_eq!(classify(&["udp", "icmp"], &p), None);
    // Short packets match nothing that reads missing bytes.
    assert!(!matches("tcp", &p[..8]));
    assert!(!matches("dst port 80", &p[..22]));
}

#[test]
fn errors_name_pattern_and_position() {
    let e = |rules: &[&str]| {
        let r: Vec<String> = rules.iter().map(|s| s.to_string()).collect();
        compile_ip_rules(&r, 2, true)
            .err()
            .unwrap_or_default()
            .join("\n")
    };
    assert_eq!(
        e(&["allow tcp", "deny (tcp"]),
        "pattern 1: position 9: missing ')'"
    );
    assert_eq!(
        e(&["allow src host"]),
        "pattern 0: position 6: IP address missing in 'host' directive"
    );
    assert_eq!(e(&["allow port echo"]), "");
    assert_eq!(
        e(&["allow echo"]),
        "pattern 0: position 6: 'echo' is ambiguous; try 'port echo', 'icmp type echo'"
    );
    assert_eq!(
        e(&["allow tcp and"]),
        "pattern 0: position 13: missing term"
    );
    assert_eq!(
        e(&["allow ip ttl 300"]),
        "pattern 0: position 6: value 300 out of range (0-255)"
    );
    assert_eq!(
        e(&["allow ip[3:2] 1"]),
        "pattern 0: position 8: field [3:2] does not fit in a single word"
    );
    assert_eq!(e(&["3 tcp"]), "pattern 0: slot 3 out of range");
    assert_eq!(e(&["maybe tcp"]), "pattern 0: unknown slot ID 'maybe'");
    assert_eq!(
        e(&["allow tcp udp"]),
        "pattern 0: position 10: transport protocol specified twice"
    );
    assert_eq!(
        e(&["allow tcp )"]),
        "pattern 0: position 10: garbage after expression at ')'"
    );
    assert!(!e(&["allow host 1.2.3.4 > 5"]).is_empty());
    let err =
        build("InfiniteSource(LIMIT 1) -> f :: IPFilter(allow tcp, drop ip ttl 999) -> Discard;")
            .err()
            .unwrap_or_default();
    assert!(
        err.contains("pattern 1: position 5: value 999 out of range (0-255)"),
        "{err}"
    );
    let err = build(
        "InfiniteSource(LIMIT 1) -> c :: Classifier(12/080, -); c[1] -> Discard; c[0] -> Discard;",
    )
    .err()
    .unwrap_or_default();
    assert!(
        err.contains("pattern 0: position 0: VALUE has an odd number of nibbles"),
        "{err}"
    );
}

fn eth(payload: &[u8], src_last: u8) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, src_last, 0x08, 0x00];
    f.extend_from_slice(payload);
    f
}

/// Frames: 3 TCP to port 80, 5 UDP, 7 ICMP echo (from 00:00:00:00:00:07).
fn mixed_pcap(dir: &std::path::Path) -> std::path::PathBuf {
    let mut frames = Vec::new();
    for _ in 0..3 {
        frames.push(eth(&ip(A, B, 6, 0, 64, 0, &tcp(1234, 80, 2)), 1));
    }
    for _ in 0..5 {
        frames.push(eth(&ip(A, B, 17, 0, 64, 0, &udp(53, 53)), 1));
    }
    for _ in 0..7 {
        frames.push(eth(&ip(B, A, 1, 0, 64, 0, &[8, 0, 0, 0, 0, 0, 0, 0]), 7));
    }
    let path = dir.join("mixed.pcap");
    pcap_of(&frames, &path);
    path
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-classify-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

#[test]
fn ipfilter_actions_route_packets() {
    let d = tmpdir("actions");
    let f = mixed_pcap(&d);
    let mut r = build(&format!(
        "FromDump({}, STOP true, FORCE_IP true) -> f :: IPFilter(allow tcp dst port 80, 1 udp, drop ether src host 00:00:00:00:00:07, 1 all);
         f[0] -> c0 :: Counter -> Discard; f[1] -> c1 :: Counter -> Discard;",
        f.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    r.run();
    assert_eq!(read(&r, "c0.count"), "3");
    assert_eq!(read(&r, "c1.count"), "5");
    assert!(
        read(&r, "f.program").starts_with("4 rules"),
        "{}",
        read(&r, "f.program")
    );
}

#[test]
fn ipclassifier_outputs_and_arity() {
    let d = tmpdir("ipc");
    let f = mixed_pcap(&d);
    let mut r = build(&format!(
        "FromDump({}, STOP true, FORCE_IP true) -> c :: IPClassifier(icmp type echo, src udp port 53 or 54, -);
         c[0] -> a :: Counter -> Discard; c[1] -> b :: Counter -> Discard; c[2] -> x :: Counter -> Discard;",
        f.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    r.run();
    assert_eq!(
        (
            read(&r, "a.count"),
            read(&r, "b.count"),
            read(&r, "x.count")
        ),
        ("7".into(), "5".into(), "3".into())
    );
    let err = build("InfiniteSource -> c :: IPClassifier(tcp, udp); c[0] -> Discard;")
        .err()
        .unwrap_or_default();
    assert!(
        err.contains("need 1 arguments, one per output port"),
        "{err}"
    );
}

#[test]
fn config_handler_replaces_rules_at_run_time() {
    let d = tmpdir("config");
    let f = mixed_pcap(&d);
    let mut r = build(&format!(
        "FromDump({}, STOP true, FORCE_IP true) -> f :: IPFilter(allow tcp, deny all) -> c :: Counter -> Discard;",
        f.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let h = r.handle();
    let err = h
        .call("f.config", Some("allow udp, deny ("))
        .expect_err("bad rules");
    assert_eq!(err, "pattern 1: position 6: missing expression after '('");
    assert!(read(&r, "f.program").ends_with("0: allow tcp -> output 0\n1: deny all -> drop"));
    h.call("f.config", Some("allow udp or icmp, deny all"))
        .expect("valid rules");
    assert!(
        read(&r, "f.program").ends_with("0: allow udp or icmp -> output 0\n1: deny all -> drop")
    );
    r.run();
    assert_eq!(read(&r, "c.count"), "12");
}

#[test]
fn decision_cache_counts_hits_and_forgets_replaced_rules() {
    let d = tmpdir("cache");
    let f = mixed_pcap(&d);
    // `a` sends the 15 frames (three flows) twice in batches of 15: the
    // first batch probes the cache before it fills any entry, the second
    // finds every packet. Then the rules change while the router runs and
    // `b` sends the frames once more: the cached "allow tcp" decisions must
    // be gone.
    let mut r = build(&format!(
        "a :: MemoryReplay(FILE {f}, LIMIT 30, BURST 15) -> s :: Strip(14);
         b :: MemoryReplay(FILE {f}, LIMIT 15, BURST 15, STOP true, ACTIVE false) -> s;
         s -> MarkIPHeader -> f :: IPFilter(allow tcp, deny all) -> c :: Counter -> Discard;
         Script(wait 0.2, write f.config allow udp, write b.active true);",
        f = f.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    r.run();
    assert_eq!(read(&r, "c.count"), "11", "6 TCP, then 5 UDP");
    assert_eq!(
        (read(&r, "f.cache_misses"), read(&r, "f.cache_hits")),
        ("30".into(), "15".into())
    );
    assert_eq!(read(&r, "f.cache_size"), "32768");
    // Off: every packet walks the tree.
    let mut r = build(&format!(
        "MemoryReplay(FILE {}, LIMIT 30, BURST 15, STOP true) -> Strip(14) -> MarkIPHeader
           -> f :: IPFilter(allow tcp, deny all) -> c :: Counter -> Discard;",
        f.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let h = r.handle();
    h.call("f.cache_size", Some("0")).expect("size");
    assert!(h.call("f.cache_size", Some("lots")).is_err());
    r.run();
    assert_eq!(read(&r, "c.count"), "6");
    assert_eq!(
        (
            read(&r, "f.cache_size"),
            read(&r, "f.cache_hits"),
            read(&r, "f.cache_misses")
        ),
        ("0".into(), "0".into(), "0".into())
    );
}

#[test]
fn classifier_element_routes_by_bytes() {
    let d = tmpdir("cls");
    let f = mixed_pcap(&d);
    let mut r = build(&format!(
        "FromDump({}, STOP true) -> c :: Classifier(23/06, 23/11 !36/0036, 12/0800, -);
         c[0] -> a :: Counter -> Discard; c[1] -> b :: Counter -> Discard; c[2] -> x :: Counter -> Discard; c[3] -> Discard;",
        f.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    r.run();
    assert_eq!(
        (
            read(&r, "a.count"),
            read(&r, "b.count"),
            read(&r, "x.count")
        ),
        ("3".into(), "5".into(), "7".into())
    );
}

#[test]
fn classifier_patterns() {
    use linerate_elements::classification::compile::pattern::parse;
    let arp_req = {
        let mut v = vec![0u8; 42];
        v[12] = 0x08;
        v[13] = 0x06;
        v[21] = 0x01;
        v
    };
    let m = |p: &str, d: &[u8]| parse(p).unwrap_or_else(|e| panic!("{p}: {e:?}")).matches(d);
    assert!(m("12/0806 20/0001", &arp_req));
    assert!(!m("12/0806 20/0002", &arp_req));
    assert!(m("12/08??", &arp_req));
    assert!(m("12/0800%fff0", &arp_req));
    assert!(m("!12/0800", &arp_req));
    assert!(m("-", &arp_req));
    assert!(!m("40/000000", &arp_req));
    assert!(m("!40/000000", &arp_req));
    assert!(parse("12/08%f").is_err());
    assert!(parse("x/08").is_err());
    assert!(parse("12/0g").is_err());
}

fn pcap_of(frames: &[Vec<u8>], path: &std::path::Path) {
    let f = std::fs::File::create(path).expect("create pcap");
    let mut w = linerate_io::pcap::PcapWriter::new(
        std::io::BufWriter::new(f),
        linerate_io::pcap::LinkType::ETHERNET,
        65535,
        false,
    )
    .expect("pcap writer");
    for (i, fr) in frames.iter().enumerate() {
        w.write(1_000_000_000 * (i as u64 + 1), fr.len() as u32, fr)
            .expect("write");
    }
}

/// A random primitive over a small address/port space so rules overlap.
fn prim() -> impl Strategy<Value = String> {
    let addr = (0u8..4, 0u8..4).prop_map(|(a, b)| format!("10.0.{a}.{b}"));
    let plen = prop_oneof![Just(0u8), Just(8), Just(16), Just(24), Just(30), Just(32)];
    let sd = prop_oneof![
        Just(""),
        Just("src "),
        Just("dst "),
        Just("src or dst "),
        Just("src and dst ")
    ];
    let port = prop_oneof![
        Just(53u16),
        Just(80),
        Just(1023),
        Just(1024),
        Just(0),
        Just(65535)
    ];
    let op = prop_oneof![
        Just(""),
        Just("== "),
        Just("!= "),
        Just("< "),
        Just("> "),
        Just("<= "),
        Just(">= ")
    ];
    let tp = prop_oneof![Just(""), Just("tcp "), Just("udp ")];
    prop_oneof![
        (sd.clone(), addr.clone()).prop_map(|(s, a)| format!("{s}host {a}")),
        (sd.clone(), addr, plen).prop_map(|(s, a, l)| format!("{s}net {a}/{l}")),
        (sd, tp, op.clone(), port).prop_map(|(s, t, o, p)| format!("{s}{t}port {o}{p}")),
        prop_oneof![
            Just("tcp"),
            Just("udp"),
            Just("icmp"),
            Just("ip proto 47"),
            Just("ip proto < 10")
        ]
        .prop_map(String::from),
        (op, 0u8..=255).prop_map(|(o, v)| format!("ip ttl {o}{v}")),
        prop_oneof![
            Just("ip frag"),
            Just("ip unfrag"),
            Just("tcp opt syn"),
            Just("ack"),
            Just("icmp type echo"),
            Just("icmp type != 0"),
            Just("ip tos & 3 == 1"),
            Just("ip[9] 17"),
            Just("transp[0:2] > 1000"),
            Just("true"),
            Just("false"),
            Just("src net 10.0.1.0 mask 255.0.255.0")
        ]
        .prop_map(String::from),
    ]
}

fn rule() -> impl Strategy<Value = String> {
    let leaf = prim().prop_map(|p| format!("({p})"));
    leaf.prop_recursive(3, 8, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} and {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} or {b})")),
            inner.clone().prop_map(|a| format!("(not {a})")),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(a, b, c)| format!("({a} ? {b} : {c})")),
        ]
    })
}

/// A random IPv4 packet over the same small space, sometimes a later
/// fragment, with options, or truncated.
fn packet() -> impl Strategy<Value = Vec<u8>> {
    (
        (0u8..4, 0u8..4, 0u8..4, 0u8..4),
        prop_oneof![Just(1u8), Just(6), Just(17), Just(47)],
        prop_oneof![
            Just(53u16),
            Just(80),
            Just(1023),
            Just(1024),
            Just(0),
            Just(65535),
            any::<u16>()
        ],
        prop_oneof![Just(53u16), Just(80), Just(1023), Just(1024), any::<u16>()],
        (
            any::<u8>(),
            any::<u8>(),
            prop_oneof![Just(0u16), Just(0x2000), Just(10)],
            any::<u8>(),
        ),
        (any::<bool>(), 0usize..48),
    )
        .prop_map(|(a, proto, sp, dp, (tos, ttl, frag, flags), (opts, cut))| {
            let mut l4 = tcp(sp, dp, flags);
            if proto == 1 {
                l4[0] = flags % 2 * 8;
            }
            let mut p = ip(
                [10, 0, a.0, a.1],
                [10, 0, a.2, a.3],
                proto,
                tos,
                ttl,
                frag,
                &l4,
            );
            if opts {
                p[0] = 0x46;
                p.splice(20..20, [1, 1, 1, 0]);
            }
            if cut < 40 {
                p.truncate(cut);
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn compiled_classifier_agrees_with_linear_matcher(
        rules in proptest::collection::vec(rule(), 1..24),
        packets in proptest::collection::vec(packet(), 1..64),
    ) {
        let exprs: Vec<_> = rules.iter().map(|r| parse_pattern(r)).collect::<Result<_, _>>()
            .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let c = Classifier::new(exprs.clone());
        for p in &packets {
            let v = PacketView::ip(p);
            prop_assert_eq!(c.lookup(&v), linear_match(&exprs, &v), "packet {:?}", p);
        }
        let mut batch = Vec::new();
        c.lookup_batch(packets.iter().map(|p| PacketView::ip(p)), &mut batch);
        let lin: Vec<_> = packets.iter().map(|p| linear_match(&exprs, &PacketView::ip(p))).collect();
        prop_assert_eq!(&batch, &lin);
        // Through the decision cache: small (8 entries, so sets overflow
        // and evict), each packet list twice so the second pass hits.
        let mut cache = DecisionCache::new(8);
        for _ in 0..2 {
            let mut cached = Vec::new();
            c.lookup_cached(&packets, |p| PacketView::ip(p), |r| r, &mut cached, &mut cache);
            prop_assert_eq!(&cached, &lin);
        }
    }
}

#[test]
fn decision_cache_never_answers_for_residual_tests() {
    // The same 5-tuple with two TTLs: the TTL test is a residual, so the
    // decision depends on more than the cache's key and must not be
    // cached; the rule after it depends on the key alone and is.
    let exprs: Vec<_> = ["udp && ip ttl > 64", "udp && dst port 53", "true"]
        .iter()
        .map(|r| parse_pattern(r).expect("rule"))
        .collect();
    let c = Classifier::new(exprs.clone());
    let lo = ip(A, B, 17, 0, 10, 0, &udp(1000, 53));
    let hi = ip(A, B, 17, 0, 100, 0, &udp(1000, 53));
    let tcp80 = ip(A, B, 6, 0, 100, 0, &tcp(1000, 80, 2));
    let pkts = [&lo, &hi, &lo, &hi, &tcp80, &tcp80];
    let mut cache = DecisionCache::new(64);
    for _ in 0..3 {
        let mut out = Vec::new();
        c.lookup_cached(&pkts, |p| PacketView::ip(p), |r| r, &mut out, &mut cache);
        assert_eq!(
            out,
            [Some(1), Some(0), Some(1), Some(0), Some(2), Some(2)],
            "TTL 10, TTL 100, ..., TCP"
        );
    }
    // The UDP flow's decisions each evaluated the TTL residual (rule 0's
    // box contains the key), so only the TCP flow was cached: both its
    // packets in the first pass missed (a group's keys are probed before
    // any of its misses is filled in), the other four TCP lookups hit.
    assert_eq!((cache.hits, cache.misses), (4, 14));
}

#[test]
fn wide_overlapping_rules_agree_with_linear_matcher() {
    // classbench's shape: prefixes of every length (many short ones) in
    // both addresses, exact ports and port ranges, no residuals: trees
    // with relaxed splits, shadowed boxes and covering boxes.
    let mut x = 987654321u64;
    let mut rnd = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let mut rules = Vec::new();
    for _ in 0..3000 {
        let sl = rnd(33);
        let dl = rnd(33);
        let s = u32::from_be_bytes([10, rnd(4) as u8, rnd(4) as u8, rnd(4) as u8]);
        let d = u32::from_be_bytes([192, 168, rnd(4) as u8, rnd(4) as u8]);
        let m = |l: u64| if l == 0 { 0 } else { u32::MAX << (32 - l) };
        let a = |v: u32| {
            let [p, q, r, t] = v.to_be_bytes();
            format!("{p}.{q}.{r}.{t}")
        };
        let port = rnd(3000);
        let mut r = format!(
            "{} src net {}/{sl} && dst net {}/{dl}",
            ["tcp", "udp", "ip"][rnd(3) as usize],
            a(s & m(sl)),
            a(d & m(dl))
        );
        match rnd(3) {
            0 => r.push_str(&format!(" && dst port {port}")),
            1 => r.push_str(&format!(
                " && dst port >= {port} && dst port <= {}",
                port + rnd(500)
            )),
            _ => {}
        }
        rules.push(r.replace("ip src", "src"));
    }
    let exprs: Vec<_> = rules
        .iter()
        .map(|r| parse_pattern(r).unwrap_or_else(|e| panic!("{r}: {e:?}")))
        .collect();
    let c = Classifier::new(exprs.clone());
    let pkts: Vec<Vec<u8>> = (0..20000)
        .map(|_| {
            let l4 = udp(rnd(65536) as u16, rnd(3600) as u16);
            ip(
                [10, rnd(4) as u8, rnd(4) as u8, rnd(5) as u8],
                [192, 168, rnd(4) as u8, rnd(5) as u8],
                [6, 17, 1][rnd(3) as usize],
                0,
                64,
                0,
                &l4,
            )
        })
        .collect();
    let mut batch = Vec::new();
    c.lookup_batch(pkts.iter().map(|p| PacketView::ip(p)), &mut batch);
    for (p, b) in pkts.iter().zip(&batch) {
        let v = PacketView::ip(p);
        let lin = linear_match(&exprs, &v);
        assert_eq!(c.lookup(&v), lin);
        assert_eq!(*b, lin);
    }
}

#[test]
fn many_rules_agree_with_linear_matcher() {
    // Large rule sets force deep trees and replication.
    let mut rules = Vec::new();
    let mut x = 12345u64;
    let mut rnd = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    for _ in 0..2000 {
        let s = format!(
            "10.{}.{}.0/{}",
            rnd(4),
            rnd(4),
            [8, 16, 24, 32][rnd(4) as usize]
        );
        let lo = rnd(2000);
        rules.push(format!(
            "{} src net {s} and dst port >= {lo} and dst port <= {} and ip ttl > {}",
            ["tcp", "udp", "ip proto 47"][rnd(3) as usize],
            lo + rnd(500),
            rnd(3) * 60
        ));
    }
    rules.push("-".into());
    let exprs: Vec<_> = rules
        .iter()
        .map(|r| parse_pattern(r).expect("valid"))
        .collect();
    let c = Classifier::new(exprs.clone());
    for _ in 0..20000 {
        let p = ip(
            [10, rnd(4) as u8, rnd(4) as u8, rnd(3) as u8],
            B,
            [6, 17, 47][rnd(3) as usize],
            0,
            rnd(256) as u8,
            0,
            &udp(1, rnd(2600) as u16),
        );
        let v = PacketView::ip(&p);
        let lin = linear_match(&exprs, &v);
        assert_eq!(c.lookup(&v), lin);
        let mut batch = Vec::new();
        c.lookup_batch([v, v], &mut batch);
        assert_eq!(batch, [lin, lin]);
    }
}
