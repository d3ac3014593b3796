//! LPM (IPv4 and IPv6 longest-prefix match) in Click's test style: literal
//! configurations, packets and expected outputs and handler values, and
//! differential property tests: the fast tables (DIR-24-8, compressed
//! trie), the reference binary tries (`IMPL reference`) and a linear scan
//! agree on random tables, updates and addresses.

mod common;

use common::{build, read, run, run_outputs};
use linerate_elements::tables::lpm::{Lpm, Route};
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_runtime::{Router, RouterOptions};
use proptest::prelude::*;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

fn write(r: &Router, h: &str, v: &str) -> Result<String, String> {
    r.handle().call(h, Some(v))
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-lpm-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_pcap(path: &Path, pkts: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path, LinkType::RAW_DLT12, 0, false).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write(1_000_000_000 * (i as u64 + 1), p.len() as u32, p)
            .unwrap();
    }
    w.flush().unwrap();
}

fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let Ok(mut r) = PcapReader::open(path) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

/// A minimal IPv4 header (20 bytes, no payload) to `dst`.
fn ip4(dst: [u8; 4]) -> Vec<u8> {
    let mut v = vec![0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 1, 1, 1, 1];
    v.extend_from_slice(&dst);
    v
}

/// A minimal IPv6 header (40 bytes, no payload) to `dst`.
fn ip6(dst: u128) -> Vec<u8> {
    let mut v = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    v.extend_from_slice(&[0x20, 1, 0xd, 0xb8]);
    v.extend_from_slice(&[0; 12]);
    v.extend_from_slice(&dst.to_be_bytes());
    v
}

fn v6(s: &str) -> u128 {
    u128::from(s.parse::<std::net::Ipv6Addr>().unwrap())
}

/// Run `LPM(config)` with `n` outputs on raw IP `pkts`; each output is
/// written (after storing DST_IP at offset 0) to a pcap file. Returns the
/// router and the packets of every output.
fn run_lpm(name: &str, config: &str, n: usize, pkts: &[Vec<u8>]) -> (Router, Vec<Vec<Vec<u8>>>) {
    run_lpm_after(name, "", config, n, pkts)
}

/// As [`run_lpm`], with `prelude` (elements ending in `->`) between the
/// source and LPM.
fn run_lpm_after(
    name: &str,
    prelude: &str,
    config: &str,
    n: usize,
    pkts: &[Vec<u8>],
) -> (Router, Vec<Vec<Vec<u8>>>) {
    let d = tmpdir(name);
    let inp = d.join("in.pcap");
    write_pcap(&inp, pkts);
    let mut text = format!(
        "FromDump({}, STOP true) -> {prelude} rt :: LPM({config});\n",
        inp.display()
    );
    for k in 0..n {
        text.push_str(&format!(
            "rt[{k}] -> StoreIPAddress(0) -> ToDump({}, ENCAP IP);\n",
            d.join(format!("out{k}.pcap")).display()
        ));
    }
    let r = run(&text, RouterOptions::default());
    let outs = (0..n)
        .map(|k| read_pcap(&d.join(format!("out{k}.pcap"))))
        .collect();
    let _ = std::fs::remove_dir_all(&d);
    (r, outs)
}

// ---------------------------------------------------------------------
// Literal tests.

const ROUTES: &str = "10.0.0.0/8 0, 10.1.0.0/16 10.1.0.1 1, 10.1.2.128/25 2, \
     10.1.2.130 10.9.9.9 0, 2001:db8::/32 1, 2001:db8:1::/48 fe80::1 2, ::/0 0";

#[test]
fn packets_follow_the_longest_prefix_in_both_families() {
    let pkts = vec![
        ip4([10, 2, 0, 1]),            // 10/8 -> 0, DST_IP = dst
        ip4([10, 1, 7, 7]),            // 10.1/16 -> 1 via 10.1.0.1
        ip4([10, 1, 2, 129]),          // /25 -> 2
        ip4([10, 1, 2, 130]),          // /32 -> 0 via 10.9.9.9
        ip4([11, 0, 0, 1]),            // no IPv4 route
        ip6(v6("2001:db8:2::5")),      // /32 -> 1
        ip6(v6("2001:db8:1:ffff::1")), // /48 -> 2 via fe80::1
        ip6(v6("3000::1")),            // ::/0 -> 0
        vec![0x45, 0, 0, 20, 0],       // truncated
        vec![0x50; 40],                // version 5
    ];
    let (r, outs) = run_lpm("literal", &format!("{ROUTES}, HEADER true"), 3, &pkts);
    let dsts: Vec<Vec<[u8; 4]>> = outs
        .iter()
        .map(|o| o.iter().map(|p| [p[0], p[1], p[2], p[3]]).collect())
        .collect();
    assert_eq!(
        dsts,
        vec![
            // DST_IP written at offset 0: the destination, or the gateway;
            // for IPv6 the first four bytes of DST_IP6.
            vec![[10, 2, 0, 1], [10, 9, 9, 9], [0x30, 0, 0, 0]],
            vec![[10, 1, 0, 1], [0x20, 1, 0xd, 0xb8]],
            vec![[10, 1, 2, 129], [0xfe, 0x80, 0, 0]],
        ]
    );
    assert_eq!(read(&r, "rt.lookups"), "10");
    assert_eq!(read(&r, "rt.no_route"), "1");
    assert_eq!(read(&r, "rt.bad"), "2");
    assert_eq!(read(&r, "rt.count"), "7");
    assert_eq!(read(&r, "rt.count4"), "4");
    assert_eq!(read(&r, "rt.count6"), "3");
}

/// Run `LPM(config)` with `n` outputs on raw IP `pkts`, `burst` packets a
/// batch; the packet count of every output, and the router.
fn count_lpm(
    config: &str,
    n: usize,
    pkts: &[Vec<u8>],
    name: &str,
    burst: usize,
) -> (Router, Vec<String>) {
    let decl = format!("rt :: LPM({config})");
    run_outputs(LinkType::RAW_DLT12, pkts, burst, &decl, n, name)
}

/// Malformed packets: empty, one byte, IPv4 truncated, IPv4 with a header
/// length (IHL) of 4 and of 0 words, version 5, IPv6 truncated, garbage.
fn malformed() -> Vec<Vec<u8>> {
    let mut ihl4 = ip4([10, 0, 0, 1]);
    ihl4[0] = 0x44;
    let mut ihl0 = ip4([10, 0, 0, 1]);
    ihl0[0] = 0x40;
    let mut v5 = ip4([10, 0, 0, 1]);
    v5[0] = 0x55;
    let mut short6 = ip6(v6("2001:db8::1"));
    short6.truncate(39);
    vec![
        vec![],
        vec![0x45],
        ip4([10, 0, 0, 1])[..19].to_vec(),
        ihl4,
        ihl0,
        v5,
        short6,
        vec![0xff; 64],
    ]
}

#[test]
fn bad_packets_leave_on_bad_output() {
    // Good packets first (10/8 -> 0, 2001:db8::/32 -> 1, one without a
    // route), then the malformed ones, which leave on output 2.
    let mut pkts = vec![
        ip4([10, 0, 0, 1]),
        ip6(v6("2001:db8::1")),
        ip4([11, 0, 0, 1]),
    ];
    pkts.extend(malformed());
    let routes = "10.0.0.0/8 0, 2001:db8::/32 1, HEADER true";
    for imp in ["fast", "reference"] {
        for burst in [1, 4, 64] {
            let cfg = format!("{routes}, BAD_OUTPUT 2, IMPL {imp}");
            let (r, counts) = count_lpm(&cfg, 3, &pkts, &format!("bad-{imp}-{burst}"), burst);
            assert_eq!(counts, ["1", "1", "8"], "{imp} burst {burst}");
            assert_eq!(read(&r, "rt.bad"), "8", "{imp} burst {burst}");
            assert_eq!(read(&r, "rt.no_route"), "1", "{imp} burst {burst}");
            assert_eq!(read(&r, "rt.lookups"), "11", "{imp} burst {burst}");
            // Without BAD_OUTPUT they are dropped, still counted.
            let cfg = format!("{routes}, IMPL {imp}");
            let (r, counts) = count_lpm(&cfg, 3, &pkts, &format!("drop-{imp}-{burst}"), burst);
            assert_eq!(counts, ["1", "1", "0"], "{imp} burst {burst}");
            assert_eq!(read(&r, "rt.bad"), "8");
            assert_eq!(read(&r, "rt.no_route"), "1");
        }
        // A batch of bad packets only goes out whole; BAD_OUTPUT may be an
        // output routes use too.
        let cfg = format!("{routes}, BAD_OUTPUT 0, IMPL {imp}");
        let (r, counts) = count_lpm(&cfg, 2, &malformed(), &format!("allbad-{imp}"), 64);
        assert_eq!(counts, ["8", "0"], "{imp}");
        assert_eq!(read(&r, "rt.bad"), "8");
        assert_eq!(read(&r, "rt.no_route"), "0");
    }
}

#[test]
fn bad_output_must_be_an_output() {
    let e = build(
        "Idle -> rt :: LPM(10.0.0.0/8 0, BAD_OUTPUT 2) -> Discard; rt[1] -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .expect("BAD_OUTPUT 2 of 2 outputs must fail");
    assert!(e.contains("BAD_OUTPUT: output 2 out of range"), "{e}");
}

#[test]
fn dst_ip_annotation_is_the_default_source() {
    // Without HEADER the DST_IP annotation is looked up, as in Click's
    // RadixIPLookup; FromDump leaves it 0.0.0.0, matched by 0/0 only.
    let pkts = vec![ip4([10, 1, 2, 3]), ip4([10, 1, 2, 3])];
    let (r, outs) = run_lpm("anno", "10.0.0.0/8 0, 0/0 1.2.3.4 1", 2, &pkts);
    assert_eq!(outs[0].len(), 0);
    assert_eq!(outs[1].len(), 2);
    assert_eq!(&outs[1][0][..4], &[1, 2, 3, 4]);
    assert_eq!(read(&r, "rt.no_route"), "0");
}

#[test]
fn table_lookup_and_update_handlers() {
    let r = build(
        &format!(
            "Idle -> rt :: LPM({ROUTES}); rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard;"
        ),
        RouterOptions::default(),
    )
    .unwrap();
    assert_eq!(
        read(&r, "rt.table"),
        "10.0.0.0/8\t\t-\t\t0\n\
         10.1.0.0/16\t\t10.1.0.1\t1\n\
         10.1.2.128/25\t\t-\t\t2\n\
         10.1.2.130/32\t\t10.9.9.9\t0\n\
         ::/0\t-\t0\n\
         2001:db8::/32\t-\t1\n\
         2001:db8:1::/48\tfe80::1\t2"
    );
    let lookup = |a: &str| {
        write(&r, "rt.lookup", a).unwrap();
        read(&r, "rt.lookup")
    };
    assert_eq!(lookup("10.1.2.130"), "0 10.9.9.9");
    assert_eq!(lookup("10.1.2.131"), "2");
    assert_eq!(lookup("12.0.0.1"), "-1");
    assert_eq!(lookup("2001:db8:1::9"), "2 fe80::1");
    assert_eq!(
        write(&r, "rt.add", "10.0.0.0/8 1").unwrap_err(),
        "conflict with existing route '10.0.0.0/8 - 0'"
    );
    write(&r, "rt.set", "10.0.0.0/8 1").unwrap();
    assert_eq!(lookup("10.200.0.1"), "1");
    write(&r, "rt.remove", "10.1.2.128/25").unwrap();
    assert_eq!(lookup("10.1.2.131"), "1 10.1.0.1");
    assert_eq!(lookup("10.1.2.130"), "0 10.9.9.9");
    write(&r, "rt.remove", "10.1.2.130/32 10.9.9.9 0").unwrap();
    assert_eq!(lookup("10.1.2.130"), "1 10.1.0.1");
    assert_eq!(
        write(&r, "rt.remove", "10.1.0.0/16 10.1.0.2 1").unwrap_err(),
        "route '10.1.0.0/16 10.1.0.2 1' not found"
    );
    write(&r, "rt.remove", "2001:db8:1::/48").unwrap();
    assert_eq!(lookup("2001:db8:1::9"), "1");
    write(&r, "rt.add", "2001:db8:1:2::/64 fe80::2 2").unwrap();
    assert_eq!(lookup("2001:db8:1:2::9"), "2 fe80::2");
    write(&r, "rt.remove", "::/0").unwrap();
    assert_eq!(lookup("3000::1"), "-1");
    assert_eq!(
        write(&r, "rt.add", "10.0.0.0/8 3").unwrap_err(),
        "expected 'ADDR/MASK [GATEWAY] OUTPUT'"
    );
    assert!(write(&r, "rt.lookup", "nonsense").is_err());
    assert_eq!(read(&r, "rt.count"), "4");
}

#[test]
fn routes_load_from_a_file_and_errors_are_reported() {
    let d = tmpdir("file");
    let f = d.join("routes.txt");
    std::fs::write(
        &f,
        "# comment\n10.0.0.0/8 1\n\n// another\n10.0.0.0/8 0\n2001:db8::/32 - 1\n192.168.0.0/16 10.0.0.1 0\n",
    )
    .unwrap();
    let r = build(
        &format!(
            "Idle -> rt :: LPM(1.0.0.0/8 0, FILE {}); rt[0] -> Discard; rt[1] -> Discard;",
            f.display()
        ),
        RouterOptions::default(),
    )
    .unwrap();
    assert_eq!(read(&r, "rt.count"), "4");
    write(&r, "rt.lookup", "10.1.1.1").unwrap();
    assert_eq!(
        read(&r, "rt.lookup"),
        "1",
        "the first route for a prefix wins"
    );
    std::fs::write(&f, "10.0.0.0/8 1\n10.0.0.0/8 x\n10.0.0.0/8 7\n").unwrap();
    let e = build(
        &format!(
            "Idle -> rt :: LPM(FILE {}, 1.0.0.0/8); rt[0] -> Discard; rt[1] -> Discard;",
            f.display()
        ),
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(
        e.contains("argument 1 should be 'ADDR/MASK [GATEWAY] OUTPUT'"),
        "{e}"
    );
    assert!(e.contains("routes.txt:2: expected"), "{e}");
    assert!(e.contains("routes.txt:3: expected"), "{e}");
    let e = build(
        "Idle -> rt :: LPM(IMPL slow); rt[0] -> Discard;",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("IMPL"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn long_prefixes_split_and_merge_tbl24_entries() {
    for imp in ["fast", "reference"] {
        let mut t = Lpm::new(4, imp == "reference");
        let add = |t: &mut Lpm, s: &str| t.add(Route::parse(s, false).unwrap(), false).unwrap();
        let port = |t: &Lpm, a: &str| {
            t.lookup(a.parse().unwrap())
                .map(|h| h.port as i32)
                .unwrap_or(-1)
        };
        add(&mut t, "1.2.3.0/24 1");
        add(&mut t, "1.2.3.64/26 2");
        add(&mut t, "1.2.3.65 3");
        add(&mut t, "1.2.0.0/16 0");
        assert_eq!(port(&t, "1.2.3.65"), 3);
        assert_eq!(port(&t, "1.2.3.66"), 2);
        assert_eq!(port(&t, "1.2.3.1"), 1);
        assert_eq!(port(&t, "1.2.4.1"), 0);
        t.remove(&Route::parse("1.2.3.0/24", true).unwrap())
            .unwrap();
        assert_eq!(port(&t, "1.2.3.1"), 0, "{imp}: /24 falls back to /16");
        assert_eq!(port(&t, "1.2.3.65"), 3);
        t.remove(&Route::parse("1.2.3.64/26", true).unwrap())
            .unwrap();
        t.remove(&Route::parse("1.2.3.65/32", true).unwrap())
            .unwrap();
        assert_eq!(port(&t, "1.2.3.65"), 0);
        assert_eq!(port(&t, "1.3.0.0"), -1);
        add(&mut t, "0.0.0.0/0 3");
        assert_eq!(port(&t, "1.3.0.0"), 3);
        assert_eq!(port(&t, "1.2.3.65"), 0);
    }
}

// ---------------------------------------------------------------------
// Differential property tests.

/// The netmask of a `len`-bit prefix of a `w`-bit address.
fn netmask(w: u32, len: u8) -> u128 {
    let full = u128::MAX >> (128 - w);
    let host = if u32::from(len) >= w { 0 } else { full >> len };
    full & !host
}

/// The longest matching route by linear scan.
fn naive(routes: &[Route], v6: bool, a: u128) -> Option<(u128, i32)> {
    routes
        .iter()
        .filter(|r| r.v6 == v6)
        .filter(|r| a & netmask(if v6 { 128 } else { 32 }, r.len) == r.addr)
        .max_by_key(|r| r.len)
        .map(|r| (r.gw, r.port))
}

/// A random route whose address shares its top bits with one of a few
/// bases, so that prefixes nest and overlap.
fn route_strategy() -> impl Strategy<Value = Route> {
    (
        any::<bool>(),
        0usize..4,
        any::<u128>(),
        0u8..=128,
        0u8..3,
        0i32..4,
    )
        .prop_map(|(v6, base, noise, len, gw, port)| {
            let bases4 = [0x0a01_0203u128, 0x0a01_0000, 0xc0a8_0000, 0x0102_0304];
            let bases6 = [
                "2001:db8::",
                "2001:db8:1::",
                "2400:cb00::",
                "2001:db8:8000::",
            ]
            .map(|s| u128::from(s.parse::<std::net::Ipv6Addr>().unwrap()));
            let (w, b) = if v6 {
                (128u32, bases6[base])
            } else {
                (32, bases4[base])
            };
            let mut len = (u32::from(len) % (w + 1)) as u8;
            // Short IPv4 prefixes rewrite millions of DIR-24-8 entries;
            // keep most of them longer so that the test stays quick.
            if !v6 && len < 8 && noise % 4 != 0 {
                len += 16;
            }
            // Flip a few low bits of the base.
            let a = (b ^ (noise & 0xff_ffff >> (noise % 24) as u32)) & (u128::MAX >> (128 - w));
            let keep = netmask(w, len);
            let gw = if gw == 0 { 0 } else { u128::from(gw) };
            Route {
                v6,
                addr: a & keep,
                len,
                gw,
                port,
            }
        })
}

#[derive(Debug, Clone)]
enum Op {
    Add(Route),
    Set(Route),
    Remove(Route, bool),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => route_strategy().prop_map(Op::Add),
        1 => route_strategy().prop_map(Op::Set),
        2 => (route_strategy(), any::<bool>()).prop_map(|(r, any)| Op::Remove(r, any)),
    ]
}

fn probes(routes: &[Route], extra: &[u128]) -> Vec<(bool, u128)> {
    let mut v = Vec::new();
    for r in routes {
        let w = if r.v6 { 128 } else { 32 };
        let host = (u128::MAX >> (128 - w)) & !netmask(w, r.len);
        for x in [0, host, host / 2, host / 3 + 1] {
            v.push((r.v6, r.addr | (x & host)));
        }
    }
    for &e in extra {
        v.push((false, e & 0xffff_ffff));
        v.push((true, e));
    }
    v
}

fn addr_of(v6: bool, a: u128) -> IpAddr {
    if v6 {
        IpAddr::V6(a.into())
    } else {
        IpAddr::V4((a as u32).into())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn fast_reference_and_linear_scan_agree(
        ops in prop::collection::vec(op_strategy(), 1..60),
        extra in prop::collection::vec(any::<u128>(), 0..16),
    ) {
        let mut fast = Lpm::new(4, false);
        let mut slow = Lpm::new(4, true);
        let mut model: Vec<Route> = Vec::new();
        for op in &ops {
            match op {
                Op::Add(r) | Op::Set(r) => {
                    let set = matches!(op, Op::Set(_));
                    let a = fast.add(*r, set);
                    prop_assert_eq!(a, slow.add(*r, set));
                    let pos = model.iter().position(|m| m.v6 == r.v6 && m.addr == r.addr && m.len == r.len);
                    match (pos, set) {
                        (Some(i), true) => model[i] = *r,
                        (Some(_), false) => prop_assert!(a.is_err()),
                        (None, _) => model.push(*r),
                    }
                }
                Op::Remove(r, any) => {
                    let mut q = *r;
                    if *any { q.port = -1; }
                    let a = fast.remove(&q);
                    prop_assert_eq!(a, slow.remove(&q));
                    let pos = model.iter().position(|m| m.v6 == q.v6 && m.addr == q.addr && m.len == q.len
                        && (q.port < 0 || (m.gw == q.gw && m.port == q.port)));
                    prop_assert_eq!(a.is_some(), pos.is_some());
                    if let Some(i) = pos { model.remove(i); }
                }
            }
        }
        let mut sorted = model.clone();
        sorted.sort_by_key(|r| (r.v6, r.addr, r.len));
        prop_assert_eq!(fast.routes(), sorted.clone());
        prop_assert_eq!(slow.routes(), sorted);
        for (v6, a) in probes(&model, &extra) {
            let want = naive(&model, v6, a);
            let got = fast.lookup(addr_of(v6, a)).map(|h| (h.gw, h.port as i32));
            prop_assert_eq!(got, want, "fast {:?}", addr_of(v6, a));
            let got = slow.lookup(addr_of(v6, a)).map(|h| (h.gw, h.port as i32));
            prop_assert_eq!(got, want, "reference {:?}", addr_of(v6, a));
            prop_assert_eq!(fast.lookup_text(addr_of(v6, a)), slow.lookup_text(addr_of(v6, a)));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn fast_and_reference_elements_forward_identically(
        routes in prop::collection::vec(route_strategy(), 1..30),
        extra in prop::collection::vec(any::<u128>(), 0..8),
        junk in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..48), 0..6),
        mode in 0..4u8,
        bad_out in prop::option::of(0usize..4),
    ) {
        let cfg: Vec<String> = routes.iter().map(|r| r.unparse(false)).collect();
        let mut cfg = cfg.join(", ");
        if let Some(b) = bad_out {
            cfg.push_str(&format!(", BAD_OUTPUT {b}"));
        }
        let mut pkts: Vec<Vec<u8>> = probes(&routes, &extra)
            .into_iter()
            .map(|(v6, a)| if v6 { ip6(a) } else { ip4((a as u32).to_be_bytes()) })
            .collect();
        pkts.extend(junk);
        pkts.extend(malformed());
        // Where the header is found: the network header at the data's
        // start (FromDump on raw IP), 14 bytes in (Unstrip), before the
        // data (Strip: every packet bad), or no network header and
        // `OFFSET 14` (a 14-byte prefix starting with 0, not IP).
        let prelude = match mode {
            1 => "Unstrip(14) ->",
            2 => "Strip(4) ->",
            _ => "",
        };
        if mode == 3 {
            for p in &mut pkts {
                p.splice(0..0, [0u8; 14]);
            }
            cfg.push_str(", OFFSET 14");
        }
        let (rf, of) = run_lpm_after("pf", prelude, &format!("{cfg}, HEADER true"), 4, &pkts);
        let (rr, or) = run_lpm_after(
            "pr",
            prelude,
            &format!("{cfg}, HEADER true, IMPL reference"),
            4,
            &pkts,
        );
        prop_assert_eq!(of, or);
        for h in ["table", "count", "lookups", "no_route", "bad"] {
            prop_assert_eq!(read(&rf, &format!("rt.{h}")), read(&rr, &format!("rt.{h}")), "{}", h);
        }
    }
}
