//! Routing tables (LinearIPLookup, RadixIPLookup) and the NAT rewriters
//! (IPRewriter, TCPRewriter, UDPRewriter, IPAddrRewriter) in Click's test
//! style: a configuration, literal input packets, and the exact expected
//! output (handler text, packets read back from ToDump). Longest-prefix
//! semantics are checked against a naive matcher on random tables.

mod common;

use common::{build, run};
use linerate_elements::iproute::lineariplookup::LinearTable;
use linerate_elements::iproute::radixiplookup::RadixTable;
use linerate_elements::iproute::routetable::{IpRoute, RouteTable};
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_runtime::{Router, RouterOptions};
use linerate_wire::ip::IpPair;
use linerate_wire::ipv4::Packet as Ipv4Packet;
use linerate_wire::tcp::Packet as TcpPacket;
use linerate_wire::udp::Packet as UdpPacket;
use proptest::prelude::*;
use std::net::Ipv4Addr;
use std::path::PathBuf;

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.strip_suffix('\n').unwrap_or(&v).to_string()
}

fn write(r: &Router, h: &str, v: &str) -> Result<String, String> {
    r.handle().call(h, Some(v))
}

fn a(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

// ---------------------------------------------------------------------
// Packets built byte by byte.

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;

fn ip_header(src: &str, dst: &str, proto: u8, payload_len: usize, frag: u16) -> Vec<u8> {
    let total = 20 + payload_len;
    let mut v = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1];
    v.extend_from_slice(&frag.to_be_bytes());
    v.extend_from_slice(&[64, proto, 0, 0]);
    v.extend_from_slice(&a(src).octets());
    v.extend_from_slice(&a(dst).octets());
    v
}

fn finish_ip(mut v: Vec<u8>) -> Vec<u8> {
    Ipv4Packet::new_unchecked(&mut v[..]).fill_checksum();
    v
}

fn tcp(src: &str, sport: u16, dst: &str, dport: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = ip_header(src, dst, 6, 20 + payload.len(), 0);
    v.extend_from_slice(&sport.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    v.extend_from_slice(payload);
    let pair = IpPair::V4 {
        src: a(src),
        dst: a(dst),
    };
    TcpPacket::new_unchecked(&mut v[20..]).fill_checksum(&pair);
    finish_ip(v)
}

fn udp(src: &str, sport: u16, dst: &str, dport: u16, payload: &[u8], csum: bool) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut v = ip_header(src, dst, 17, len, 0);
    v.extend_from_slice(&sport.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&[(len >> 8) as u8, len as u8, 0, 0]);
    v.extend_from_slice(payload);
    if csum {
        let pair = IpPair::V4 {
            src: a(src),
            dst: a(dst),
        };
        UdpPacket::new_unchecked(&mut v[20..]).fill_checksum(&pair);
    }
    finish_ip(v)
}

/// The flow of an IPv4 TCP/UDP packet, after checking every checksum.
fn flow_of(p: &[u8]) -> (Ipv4Addr, u16, Ipv4Addr, u16) {
    let ip = Ipv4Packet::new_checked(p).unwrap();
    assert!(ip.verify_checksum(), "IP checksum");
    let pair = IpPair::V4 {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
    };
    let t = &p[20..];
    match ip.protocol().0 {
        6 => assert!(
            TcpPacket::new_checked(t).unwrap().verify_checksum(&pair),
            "TCP checksum"
        ),
        17 => assert!(
            UdpPacket::new_checked(t).unwrap().verify_checksum(&pair),
            "UDP checksum"
        ),
        _ => {}
    }
    (
        ip.src_addr(),
        u16::from_be_bytes([t[0], t[1]]),
        ip.dst_addr(),
        u16::from_be_bytes([t[2], t[3]]),
    )
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-routing-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write raw IP packets to a pcap file (link type raw IP).
fn write_pcap(path: &PathBuf, pkts: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path, LinkType::RAW_DLT12, 0, false).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write(1_000_000_000 * (i as u64 + 1), p.len() as u32, p)
            .unwrap();
    }
    w.flush().unwrap();
}

fn read_pcap(path: &PathBuf) -> Vec<Vec<u8>> {
    let mut r = PcapReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

/// Run `rw_decl` (an element named `rw` with two outputs) on `pkts` read
/// from a pcap file; return the router and the packets of outputs 0 and 1.
fn run_nat(name: &str, rw_decl: &str, pkts: &[Vec<u8>]) -> (Router, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let d = tmpdir(name);
    let (inp, o0, o1) = (d.join("in.pcap"), d.join("out0.pcap"), d.join("out1.pcap"));
    write_pcap(&inp, pkts);
    let r = run(
        &format!(
            "FromDump({}, STOP true, FORCE_IP true) -> {rw_decl};
             rw[0] -> ToDump({}, ENCAP IP); rw[1] -> ToDump({}, ENCAP IP);",
            inp.display(),
            o0.display(),
            o1.display()
        ),
        RouterOptions::default(),
    );
    let (p0, p1) = (read_pcap(&o0), read_pcap(&o1));
    let _ = std::fs::remove_dir_all(&d);
    (r, p0, p1)
}

// ---------------------------------------------------------------------
// Routing tables.

/// The naive longest-prefix matcher: the longest prefix containing `x`;
/// for a repeated prefix the first route given wins.
fn naive(routes: &[IpRoute], x: Ipv4Addr) -> Option<IpRoute> {
    let mut best: Option<IpRoute> = None;
    for r in routes {
        if r.contains(x) && best.is_none_or(|b| r.prefix_len > b.prefix_len) {
            best = Some(*r);
        }
    }
    best
}

fn route_strategy() -> impl Strategy<Value = IpRoute> {
    // Few distinct high bits, so prefixes nest and collide often.
    (0u32..8, any::<u32>(), 0u8..=32, 0i32..4, prop::bool::ANY).prop_map(
        |(hi, lo, len, port, gw)| {
            let addr = (hi << 29) | (lo >> 3);
            let g = if gw { a("192.168.0.1") } else { a("0.0.0.0") };
            IpRoute::new(Ipv4Addr::from(addr), len, g, port)
        },
    )
}

fn probe_addrs(routes: &[IpRoute], extra: &[u32]) -> Vec<Ipv4Addr> {
    let mut v: Vec<Ipv4Addr> = extra.iter().map(|&x| Ipv4Addr::from(x)).collect();
    for (i, r) in routes.iter().enumerate() {
        let base = u32::from(r.addr);
        let host = !r.mask();
        v.push(r.addr);
        v.push(Ipv4Addr::from(base | host));
        v.push(Ipv4Addr::from(
            base | (host & (i as u32).wrapping_mul(0x9E37_79B9)),
        ));
        v.push(Ipv4Addr::from(base.wrapping_sub(1)));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn lookups_match_a_naive_longest_prefix_matcher(
        routes in prop::collection::vec(route_strategy(), 0..80),
        extra in prop::collection::vec(any::<u32>(), 0..40),
    ) {
        let mut radix = RadixTable::new();
        let mut linear = LinearTable::new();
        for r in &routes {
            let _ = radix.add_route(*r, false);
            let _ = linear.add_route(*r, false);
        }
        for x in probe_addrs(&routes, &extra) {
            let want = naive(&routes, x);
            prop_assert_eq!(radix.lookup_route(x), want, "radix {}", x);
            prop_assert_eq!(linear.lookup_route(x), want, "linear {}", x);
        }
    }

    #[test]
    fn add_set_remove_keep_tables_consistent(
        ops in prop::collection::vec((0u8..3, route_strategy()), 1..120),
        extra in prop::collection::vec(any::<u32>(), 0..20),
    ) {
        let mut radix = RadixTable::new();
        let mut linear = LinearTable::new();
        let mut model: Vec<IpRoute> = Vec::new();
        for (op, r) in &ops {
            let existing = model.iter().position(|m| m.same_prefix(r));
            match op {
                0 | 1 => {
                    let set = *op == 1;
                    let want = match existing {
                        Some(i) if !set => Err(model[i]),
                        Some(i) => { let old = model[i]; model[i] = *r; Ok(Some(old)) }
                        None => { model.push(*r); Ok(None) }
                    };
                    prop_assert_eq!(radix.add_route(*r, set), want);
                    prop_assert_eq!(linear.add_route(*r, set), want);
                }
                _ => {
                    // Remove by prefix only (port -1) half the time.
                    let req = if r.port % 2 == 0 { IpRoute { port: -1, ..*r } } else { *r };
                    let want = existing.filter(|&i| req.matches(&model[i])).map(|i| model.remove(i));
                    prop_assert_eq!(radix.remove_route(&req), want);
                    prop_assert_eq!(linear.remove_route(&req), want);
                }
            }
        }
        let mut have_r = radix.routes();
        let mut have_l = linear.routes();
        let mut want = model.clone();
        let key = |r: &IpRoute| (u32::from(r.addr), r.prefix_len);
        have_r.sort_by_key(key);
        have_l.sort_by_key(key);
        want.sort_by_key(key);
        prop_assert_eq!(&have_r, &want);
        prop_assert_eq!(&have_l, &want);
        let all: Vec<IpRoute> = ops.iter().map(|(_, r)| *r).collect();
        for x in probe_addrs(&all, &extra) {
            let w = naive(&model, x);
            prop_assert_eq!(radix.lookup_route(x), w, "radix {}", x);
            prop_assert_eq!(linear.lookup_route(x), w, "linear {}", x);
        }
    }
}

const CLICK_EXAMPLE: &str =
    "18.26.4.24/32 0, 18.26.4.255/32 0, 18.26.4.0/32 0, 18.26.4/24 1, 0/0 18.26.4.1 1";

#[test]
fn table_handler_prints_clicks_columns() {
    for class in ["LinearIPLookup", "RadixIPLookup"] {
        let r = build(
            &format!("Idle -> rt :: {class}({CLICK_EXAMPLE}); rt[0] -> Discard; rt[1] -> Discard;"),
            RouterOptions::default(),
        )
        .unwrap();
        assert_eq!(
            read(&r, "rt.table"),
            "18.26.4.24/32\t\t-\t\t0\n\
             18.26.4.255/32\t\t-\t\t0\n\
             18.26.4.0/32\t\t-\t\t0\n\
             18.26.4.0/24\t\t-\t\t1\n\
             0.0.0.0/0\t\t18.26.4.1\t1",
            "{class}"
        );
    }
}

fn lookup(r: &Router, el: &str, addr: &str) -> String {
    write(r, &format!("{el}.lookup"), addr).unwrap();
    read(r, &format!("{el}.lookup"))
}

#[test]
fn lookup_add_set_remove_and_errors() {
    for class in ["LinearIPLookup", "RadixIPLookup"] {
        let r = build(
            &format!("Idle -> rt :: {class}(10.0.0.0/8 0, 10.1.0.0/16 10.1.0.1 1); rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard;"),
            RouterOptions::default(),
        )
        .unwrap();
        assert_eq!(lookup(&r, "rt", "10.1.2.3"), "1 10.1.0.1");
        assert_eq!(lookup(&r, "rt", "10.2.2.3"), "0");
        assert_eq!(lookup(&r, "rt", "11.0.0.1"), "-1");
        assert_eq!(
            write(&r, "rt.lookup", "bogus").unwrap_err(),
            "expected IP address, not 'bogus'"
        );
        write(&r, "rt.add", "0.0.0.0/0 192.168.1.1 2").unwrap();
        assert_eq!(lookup(&r, "rt", "11.0.0.1"), "2 192.168.1.1");
        assert_eq!(
            write(&r, "rt.add", "10.0.0.0/8 1").unwrap_err(),
            "conflict with existing route '10.0.0.0/8 - 0'"
        );
        write(&r, "rt.set", "10.0.0.0/8 2").unwrap();
        assert_eq!(lookup(&r, "rt", "10.2.2.3"), "2");
        assert_eq!(
            write(&r, "rt.add", "10.0.0.0/8 3").unwrap_err(),
            "expected 'ADDR/MASK [GATEWAY] OUTPUT'"
        );
        assert_eq!(
            write(&r, "rt.remove", "10.1.0.0/16 10.1.0.2 1").unwrap_err(),
            "route '10.1.0.0/16 10.1.0.2 1' not found"
        );
        write(&r, "rt.remove", "10.1.0.0/16").unwrap();
        assert_eq!(lookup(&r, "rt", "10.1.2.3"), "2");
        assert_eq!(
            write(&r, "rt.remove", "10.1.0.0/16").unwrap_err(),
            "route '10.1.0.0/16 - -1' not found"
        );
        assert_eq!(
            read(&r, "rt.table"),
            if class == "LinearIPLookup" {
                "10.0.0.0/8\t\t-\t\t2\n0.0.0.0/0\t\t192.168.1.1\t2"
            } else {
                // Radix puts a replaced route in a new slot, as Click's does.
                "0.0.0.0/0\t\t192.168.1.1\t2\n10.0.0.0/8\t\t-\t\t2"
            },
            "{class}"
        );
    }
}

#[test]
fn ctrl_is_atomic() {
    for class in ["LinearIPLookup", "RadixIPLookup"] {
        let r = build(
            &format!("Idle -> rt :: {class}(10.0.0.0/8 0); rt[0] -> Discard; rt[1] -> Discard;"),
            RouterOptions::default(),
        )
        .unwrap();
        let before = read(&r, "rt.table");
        // The third line fails: nothing of the first two remains.
        assert_eq!(
            write(
                &r,
                "rt.ctrl",
                "add 20.0.0.0/8 1\nset 10.0.0.0/8 1\nremove 30.0.0.0/8\n"
            )
            .unwrap_err(),
            "route '30.0.0.0/8 - -1' not found"
        );
        assert_eq!(read(&r, "rt.table"), before, "{class}");
        assert_eq!(
            write(&r, "rt.ctrl", "add 20.0.0.0/8 1\nfrobnicate 1\n").unwrap_err(),
            "bad command 'frobnicate'"
        );
        assert_eq!(read(&r, "rt.table"), before, "{class}");
        write(
            &r,
            "rt.ctrl",
            "add 20.0.0.0/8 1\n\nset 10.0.0.0/8 1 // comment\nremove 20.0.0.0/8 - 1",
        )
        .unwrap();
        assert_eq!(read(&r, "rt.table"), "10.0.0.0/8\t\t-\t\t1", "{class}");
    }
}

#[test]
fn bad_routes_are_configuration_errors() {
    for class in ["LinearIPLookup", "RadixIPLookup"] {
        let e = build(
            &format!("Idle -> rt :: {class}(10.0.0.0/8 0, 1.2.3.4/40 0, 10.0.0.0/8 5, 2.0.0.0/8 x 0); rt[0] -> Discard;"),
            RouterOptions::default(),
        )
        .err()
        .unwrap();
        for n in [2, 3, 4] {
            assert!(
                e.contains(&format!(
                    "argument {n} should be 'ADDR/MASK [GATEWAY] OUTPUT'"
                )),
                "{class}: {e}"
            );
        }
        assert!(!e.contains("argument 1 "), "{e}");
    }
}

#[test]
fn linear_zero_route_moves_into_a_freed_slot_as_in_click() {
    let r = build(
        "Idle -> rt :: LinearIPLookup(1.0.0.0/8 0, 2.0.0.0/8 0, 0.0.0.0/32 0); rt[0] -> Discard;",
        RouterOptions::default(),
    )
    .unwrap();
    write(&r, "rt.remove", "1.0.0.0/8").unwrap();
    assert_eq!(
        read(&r, "rt.table"),
        "0.0.0.0/32\t\t-\t\t0\n2.0.0.0/8\t\t-\t\t0"
    );
}

#[test]
fn packets_follow_longest_prefix_and_get_the_gateway() {
    // IPRewriter(keep ...) sets DST_IP from each packet's destination; the
    // routing table then splits them by longest prefix.
    let pkts = vec![
        udp("1.1.1.1", 1, "10.1.2.3", 53, b"a", true),
        udp("1.1.1.1", 1, "10.2.2.3", 53, b"b", true),
        udp("1.1.1.1", 1, "10.1.9.9", 53, b"c", true),
        udp("1.1.1.1", 1, "11.0.0.1", 53, b"d", true),
        udp("1.1.1.1", 1, "12.0.0.1", 53, b"e", true),
    ];
    for class in ["LinearIPLookup", "RadixIPLookup"] {
        let d = tmpdir(class);
        let inp = d.join("in.pcap");
        write_pcap(&inp, &pkts);
        let r = run(
            &format!(
                "FromDump({}, STOP true, FORCE_IP true) -> IPRewriter(keep 0 0)
                 -> rt :: {class}(10.0.0.0/8 0, 10.1.0.0/16 10.1.0.1 1, 11.0.0.0/8 2);
                 rt[0] -> c0 :: Counter -> Discard;
                 rt[1] -> c1 :: Counter -> Discard;
                 rt[2] -> c2 :: Counter -> Discard;",
                inp.display()
            ),
            RouterOptions::default(),
        );
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(
            (
                read(&r, "c0.count"),
                read(&r, "c1.count"),
                read(&r, "c2.count")
            ),
            ("1".into(), "2".into(), "1".into()),
            "{class}"
        );
    }
}

// ---------------------------------------------------------------------
// NAT rewriters.

#[test]
fn iprewriter_tcp_round_trip_with_checksums() {
    let pkts = vec![
        tcp("10.0.0.1", 1234, "8.8.8.8", 80, SYN, b""),
        // The reply, addressed to the translated flow.
        tcp("8.8.8.8", 80, "1.0.0.1", 1024, SYN | ACK, b""),
        tcp("10.0.0.1", 1234, "8.8.8.8", 80, ACK, b"GET /"),
        // A second connection gets the next port.
        tcp("10.0.0.2", 1234, "8.8.8.8", 80, SYN, b""),
        // Unknown reply flow: a new forward mapping from input 0's pattern.
        tcp("9.9.9.9", 7, "1.0.0.1", 2000, SYN, b""),
    ];
    let (r, out0, out1) = run_nat(
        "iprw-tcp",
        "rw :: IPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, GUARANTEE 0)",
        &pkts,
    );
    let f0: Vec<_> = out0.iter().map(|p| flow_of(p)).collect();
    let f1: Vec<_> = out1.iter().map(|p| flow_of(p)).collect();
    assert_eq!(
        f0,
        vec![
            (a("1.0.0.1"), 1024, a("8.8.8.8"), 80),
            (a("1.0.0.1"), 1024, a("8.8.8.8"), 80),
            (a("1.0.0.1"), 1025, a("8.8.8.8"), 80),
            (a("1.0.0.1"), 1026, a("1.0.0.1"), 2000),
        ]
    );
    assert_eq!(f1, vec![(a("8.8.8.8"), 80, a("10.0.0.1"), 1234)]);
    // Payload untouched.
    assert_eq!(&out0[1][40..], b"GET /");
    assert_eq!(read(&r, "rw.size"), "3");
    assert_eq!(read(&r, "rw.nmappings"), "3");
    assert_eq!(read(&r, "rw.mapping_failures"), "0");
    assert_eq!(read(&r, "rw.patterns"), "1.0.0.1 1024-65535 - - [3]");
    assert_eq!(read(&r, "rw.udp_table"), "");
    assert_eq!(
        read(&r, "rw.tcp_table"),
        "(10.0.0.1, 1234, 8.8.8.8, 80) => (1.0.0.1, 1024, 8.8.8.8, 80) [*0 1] i0 exp300\n\
         (8.8.8.8, 80, 1.0.0.1, 1024) => (8.8.8.8, 80, 10.0.0.1, 1234) [0 *1] i0 exp300\n\
         (10.0.0.2, 1234, 8.8.8.8, 80) => (1.0.0.1, 1025, 8.8.8.8, 80) [*0 1] i0 exp300\n\
         (8.8.8.8, 80, 1.0.0.1, 1025) => (8.8.8.8, 80, 10.0.0.2, 1234) [0 *1] i0 exp300\n\
         (9.9.9.9, 7, 1.0.0.1, 2000) => (1.0.0.1, 1026, 1.0.0.1, 2000) [*0 1] i0 exp300\n\
         (1.0.0.1, 2000, 1.0.0.1, 1026) => (1.0.0.1, 2000, 9.9.9.9, 7) [0 *1] i0 exp300"
    );
    write(&r, "rw.tcp_lookup", "10.0.0.2 1234 8.8.8.8 80").unwrap();
    assert_eq!(read(&r, "rw.tcp_lookup"), "1.0.0.1 1025 8.8.8.8 80");
    write(&r, "rw.tcp_lookup", "10.0.0.3 1234 8.8.8.8 80").unwrap();
    assert_eq!(read(&r, "rw.tcp_lookup"), "");
    write(&r, "rw.clear", "").unwrap();
    assert_eq!(read(&r, "rw.size"), "0");
}

#[test]
fn udprewriter_keeps_zero_checksums_and_prefers_the_source_port() {
    let pkts = vec![
        udp("192.168.1.5", 5000, "4.4.4.4", 53, b"query", true),
        udp("192.168.1.6", 6000, "4.4.4.4", 53, b"nocsum", false),
        udp("4.4.4.4", 53, "18.26.4.44", 5000, b"answer", true),
        // Same source port from another host: the preferred port is taken.
        udp("192.168.1.7", 5000, "4.4.4.4", 53, b"q2", true),
    ];
    let (r, out0, out1) = run_nat(
        "udprw",
        "rw :: UDPRewriter(pattern 18.26.4.44 5000-5001 - - 0 1)",
        &pkts,
    );
    assert_eq!(out0.len(), 2);
    assert_eq!(flow_of(&out0[0]), (a("18.26.4.44"), 5000, a("4.4.4.4"), 53));
    // 6000 lies outside the range: the free port of the range was chosen.
    assert_eq!(flow_of(&out0[1]), (a("18.26.4.44"), 5001, a("4.4.4.4"), 53));
    // No checksum stays no checksum.
    assert_eq!(&out0[1][26..28], &[0, 0]);
    assert_eq!(out1.len(), 1);
    assert_eq!(
        flow_of(&out1[0]),
        (a("4.4.4.4"), 53, a("192.168.1.5"), 5000)
    );
    // Both ports are in use: the fourth flow fails.
    assert_eq!(read(&r, "rw.mapping_failures"), "1");
    assert_eq!(read(&r, "rw.size"), "2");
}

#[test]
fn tcprewriter_drops_non_tcp_and_passes_on_pass_inputs() {
    let d = tmpdir("tcprw");
    let inp = d.join("in.pcap");
    let mut frag = udp("10.0.0.1", 1, "10.0.0.2", 2, b"x", true);
    frag[6] = 0x00;
    frag[7] = 0x10; // fragment offset 16: not the first fragment
    let frag = finish_ip({
        frag[10] = 0;
        frag[11] = 0;
        frag
    });
    let mut short = tcp("10.0.0.1", 1, "10.0.0.2", 2, SYN, b"");
    short.truncate(25);
    write_pcap(
        &inp,
        &[
            udp("10.0.0.1", 1, "10.0.0.2", 2, b"u", true),
            frag,
            short,
            tcp("10.0.0.1", 1, "10.0.0.2", 2, SYN, b""),
        ],
    );
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> t :: Tee;
             t[0] -> rw :: TCPRewriter(pattern - - 10.9.9.9 - 0 0) -> c0 :: Counter -> Discard;
             t[1] -> pw :: TCPRewriter(pass 1); pw[0] -> p0 :: Counter -> Discard; pw[1] -> p1 :: Counter -> Discard;",
            inp.display()
        ),
        RouterOptions::default(),
    );
    let _ = std::fs::remove_dir_all(&d);
    assert_eq!(read(&r, "c0.count"), "1");
    assert_eq!(read(&r, "rw.size"), "1");
    assert_eq!(read(&r, "p1.count"), "4");
    assert_eq!(read(&r, "p0.count"), "0");
    assert_eq!(read(&r, "pw.size"), "0");
    assert_eq!(read(&r, "pw.patterns"), "<nochange>");
}

#[test]
fn tcp_state_selects_the_timeout() {
    let pkts = vec![
        tcp("10.0.0.1", 1000, "20.0.0.1", 80, SYN, b""),
        tcp("20.0.0.1", 80, "10.0.0.1", 1000, SYN | ACK, b""),
        tcp("10.0.0.1", 1000, "20.0.0.1", 80, ACK, b"hello"),
        tcp("20.0.0.1", 80, "10.0.0.1", 1000, ACK, b"world"),
        tcp("10.0.0.1", 2000, "20.0.0.1", 80, SYN, b""),
        tcp("10.0.0.1", 2000, "20.0.0.1", 80, FIN | ACK, b""),
        tcp("20.0.0.1", 80, "10.0.0.1", 2000, FIN | ACK, b""),
    ];
    let (r, out0, out1) = run_nat(
        "tcpstate",
        "rw :: TCPRewriter(keep 0 1, TCP_GUARANTEE 0, TCP_TIMEOUT 1000, TCP_DONE_TIMEOUT 30)",
        &pkts,
    );
    assert_eq!((out0.len(), out1.len()), (4, 3));
    assert_eq!(
        read(&r, "rw.table"),
        "(10.0.0.1, 1000, 20.0.0.1, 80) => (10.0.0.1, 1000, 20.0.0.1, 80) [*0 1] i0 exp1000\n\
         (20.0.0.1, 80, 10.0.0.1, 1000) => (20.0.0.1, 80, 10.0.0.1, 1000) [0 *1] i0 exp1000\n\
         (10.0.0.1, 2000, 20.0.0.1, 80) => (10.0.0.1, 2000, 20.0.0.1, 80) [*0 1] i0 exp30\n\
         (20.0.0.1, 80, 10.0.0.1, 2000) => (20.0.0.1, 80, 10.0.0.1, 2000) [0 *1] i0 exp30"
    );
    for p in out0.iter().chain(&out1) {
        flow_of(p);
    }
}

/// Click's `\<hex>` string syntax for a packet, for InfiniteSource and
/// TimedSource DATA.
fn hex(p: &[u8]) -> String {
    let mut s = String::from("\\<");
    for b in p {
        s.push_str(&format!("{b:02x}"));
    }
    s.push('>');
    s
}

#[test]
fn a_new_flow_takes_over_a_reply_key_and_the_old_flow_goes() {
    // Flow A (keep) owns reply key 2.2.2.2:2 -> 1.1.1.1:1; the pattern on
    // input 1 maps flow B onto 1.1.1.1:1 -> 2.2.2.2:2, whose reply key is
    // the same: A is destroyed, as in Click.
    let fa = udp("1.1.1.1", 1, "2.2.2.2", 2, b"a", true);
    let fb = udp("3.3.3.3", 3, "2.2.2.2", 2, b"b", true);
    let r = run(
        &format!(
            "rw :: UDPRewriter(keep 0 1, pattern 1.1.1.1 1 - - 0 1);
             TimedSource(INTERVAL 1, DATA {}, LIMIT 1) -> rw;
             TimedSource(INTERVAL 2, DATA {}, LIMIT 1, STOP true) -> [1]rw;
             rw[0] -> c :: Counter -> Discard; rw[1] -> Discard;",
            hex(&fa),
            hex(&fb)
        ),
        RouterOptions {
            simtime: Some(1_000_000_000),
            ..Default::default()
        },
    );
    assert_eq!(read(&r, "c.count"), "2");
    assert_eq!(read(&r, "rw.size"), "1");
    assert_eq!(read(&r, "rw.nmappings"), "1");
    assert_eq!(read(&r, "rw.patterns"), "<keep>\n1.1.1.1 1 - - [1]");
}

#[test]
fn timeouts_reap_idle_flows_on_simulated_time() {
    // Flow A sends once; flow B every second for 30 s. With TIMEOUT 10 and
    // a 1 s reap interval, A is gone at the end and B remains.
    let fa = udp("10.0.0.1", 1, "20.0.0.1", 2, b"a", true);
    let fb = udp("10.0.0.2", 1, "20.0.0.1", 2, b"b", true);
    let r = run(
        &format!(
            "TimedSource(INTERVAL 1, DATA {}, LIMIT 1) -> rw :: UDPRewriter(keep 0 0, TIMEOUT 10, GUARANTEE 0, REAP_INTERVAL 1) -> c :: Counter -> Discard;
             TimedSource(INTERVAL 1, DATA {}, LIMIT 30, STOP true) -> rw;",
            hex(&fa),
            hex(&fb)
        ),
        RouterOptions {
            simtime: Some(1_000_000_000),
            ..Default::default()
        },
    );
    assert_eq!(read(&r, "c.count"), "31");
    assert_eq!(read(&r, "rw.size"), "1");
    assert_eq!(read(&r, "rw.nmappings"), "1");
    assert!(read(&r, "rw.table").starts_with("(10.0.0.2, 1, 20.0.0.1, 2) => "));
}

#[test]
fn capacity_evicts_best_effort_flows_and_guarantees_block() {
    let pkts: Vec<Vec<u8>> = (0..4)
        .map(|i| udp(&format!("10.0.0.{}", i + 1), 7, "20.0.0.1", 9, b"x", true))
        .collect();
    // Without guarantee the oldest flow is evicted for each new one.
    let (r, out0, _) = run_nat(
        "cap1",
        "rw :: UDPRewriter(keep 0 1, MAPPING_CAPACITY 2, GUARANTEE 0)",
        &pkts,
    );
    assert_eq!(out0.len(), 4);
    assert_eq!(read(&r, "rw.size"), "2");
    assert_eq!(read(&r, "rw.capacity"), "2");
    assert!(read(&r, "rw.table").starts_with("(10.0.0.3, 7, 20.0.0.1, 9)"));
    // With the default 5 s guarantee, new flows are refused.
    let (r, out0, _) = run_nat("cap2", "rw :: UDPRewriter(keep 0 1, CAPACITY 2)", &pkts);
    assert_eq!(out0.len(), 2);
    assert_eq!(read(&r, "rw.mapping_failures"), "2");
    write(&r, "rw.capacity", "1").unwrap();
    assert_eq!(read(&r, "rw.size"), "1");
}

#[test]
fn ipaddrrewriter_basic_nat_round_trip() {
    let pkts = vec![
        tcp("192.168.0.10", 4000, "8.8.8.8", 80, SYN, b""),
        udp("192.168.0.10", 4001, "8.8.4.4", 53, b"q", true),
        udp("192.168.0.11", 4001, "8.8.4.4", 53, b"q", true),
        tcp("8.8.8.8", 80, "18.26.4.1", 4000, SYN | ACK, b""),
        udp("8.8.4.4", 53, "18.26.4.2", 4001, b"r", true),
    ];
    let (r, out0, out1) = run_nat(
        "addrrw",
        "rw :: IPAddrRewriter(pattern 18.26.4.0/24# - 0 1)",
        &pkts,
    );
    let f0: Vec<_> = out0.iter().map(|p| flow_of(p)).collect();
    let f1: Vec<_> = out1.iter().map(|p| flow_of(p)).collect();
    assert_eq!(
        f0,
        vec![
            (a("18.26.4.1"), 4000, a("8.8.8.8"), 80),
            (a("18.26.4.1"), 4001, a("8.8.4.4"), 53),
            (a("18.26.4.2"), 4001, a("8.8.4.4"), 53),
        ]
    );
    assert_eq!(
        f1,
        vec![
            (a("8.8.8.8"), 80, a("192.168.0.10"), 4000),
            (a("8.8.4.4"), 53, a("192.168.0.11"), 4001),
        ]
    );
    assert_eq!(
        read(&r, "rw.table"),
        "192.168.0.10 => 18.26.4.1 [*0 1] i0 exp5\n\
         18.26.4.1 => 192.168.0.10 [0 *1] i0 exp5\n\
         192.168.0.11 => 18.26.4.2 [*0 1] i0 exp5\n\
         18.26.4.2 => 192.168.0.11 [0 *1] i0 exp5"
    );
    assert_eq!(read(&r, "rw.patterns"), "18.26.4.1-18.26.4.254 - [2]");
}

#[test]
fn bad_input_specs_are_reported_like_click() {
    for (conf, want) in [
        (
            "IPRewriter(drop, frob)",
            "input spec 1: unknown specification",
        ),
        (
            "IPRewriter(keep 0 3)",
            "input spec 0: output port out of range",
        ),
        (
            "IPRewriter(pattern 1.0.0.1 70000 - - 0 0)",
            "input spec 0: bad source port",
        ),
        (
            "IPRewriter(pattern NAT 0 0)",
            "input spec 0: no such pattern 'NAT'",
        ),
        (
            "UDPRewriter(drop x)",
            "input spec 0: syntax error, expected 'drop'",
        ),
        (
            "TCPRewriter(drop, drop)",
            "need 1 arguments, one per input port",
        ),
        ("UDPRewriter(drop, TIMEOUT x)", "TIMEOUT"),
    ] {
        let e = build(
            &format!("Idle -> {conf} -> Discard;"),
            RouterOptions::default(),
        )
        .err()
        .unwrap_or_else(|| panic!("{conf} should fail"));
        assert!(e.contains(want), "{conf}: {e}");
    }
}

#[test]
fn pattern_handlers_replace_specs_and_drop_their_flows() {
    let pkts = vec![udp("10.0.0.1", 7, "20.0.0.1", 9, b"x", true)];
    let (r, out0, _) = run_nat("patw", "rw :: UDPRewriter(keep 0 1)", &pkts);
    assert_eq!(out0.len(), 1);
    assert_eq!(read(&r, "rw.pattern0"), "<keep> [1]");
    write(&r, "rw.pattern0", "pattern 1.2.3.4 - - - 1 0").unwrap();
    assert_eq!(read(&r, "rw.size"), "0");
    assert_eq!(read(&r, "rw.pattern0"), "1.2.3.4 - - -");
    assert!(write(&r, "rw.pattern0", "keep 0 9").is_err());
}
