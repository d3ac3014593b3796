//! Click-style tests of the Ethernet elements (EtherEncap, EtherRewrite,
//! EtherVLANEncap, ARPResponder, ARPQuerier) and the IP encapsulation
//! elements (IPEncap, UDPIPEncap, ICMPPingEncap): literal input packets,
//! output frames read back from ToDump and compared byte for byte with
//! hand-computed frames, checksums verified with `linerate_wire`.

mod common;

use common::{build, run};
use linerate_io::pcap::PcapReader;
use linerate_runtime::{Router, RouterOptions};
use std::path::PathBuf;

fn sim() -> RouterOptions {
    RouterOptions {
        simtime: Some(1_000_000_000),
        ..Default::default()
    }
}

fn read(r: &Router, h: &str) -> String {
    r.handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"))
}

fn write(r: &Router, h: &str, v: &str) -> Result<String, String> {
    r.handle().call(h, Some(v))
}

/// Click's `\<hex>` notation for `b`.
fn hex(b: &[u8]) -> String {
    let mut s = String::from("\\<");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s.push('>');
    s
}

/// Bytes from a hex string with optional spaces.
fn bytes(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

struct Tmp(PathBuf);

impl Tmp {
    fn new(test: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("linerate-eth-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }
    fn file(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The packets of a pcap file.
fn frames(path: &str) -> Vec<Vec<u8>> {
    let mut r = PcapReader::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

fn ip_checksum_ok(ip: &[u8]) -> bool {
    linerate_wire::ipv4::Packet::new_checked(ip)
        .map(|p| p.verify_checksum())
        .unwrap_or(false)
}

// ---------------------------------------------------------------- EtherEncap

#[test]
fn etherencap_prepends_the_configured_header() {
    let t = Tmp::new("etherencap");
    let out = t.file("out.pcap");
    let r = run(
        &format!(
            "InfiniteSource(DATA {}, LIMIT 2, STOP true)
               -> e :: EtherEncap(0x0800, 1:2:3:4:5:6, 0a:0b:0c:0d:0e:0f)
               -> ToDump({out})",
            hex(&[0xaa, 0xbb, 0xcc])
        ),
        RouterOptions::default(),
    );
    let want = bytes("0a0b0c0d0e0f 010203040506 0800 aabbcc");
    assert_eq!(frames(&out), vec![want.clone(), want]);
    assert_eq!(read(&r, "e.src"), "01-02-03-04-05-06\n");
    assert_eq!(read(&r, "e.dst"), "0A-0B-0C-0D-0E-0F\n");
    assert_eq!(read(&r, "e.ethertype"), "2048\n");
    write(&r, "e.ethertype", "0x86dd").unwrap();
    write(&r, "e.src", "00:00:00:00:00:01").unwrap();
    assert_eq!(read(&r, "e.ethertype"), "34525\n");
    assert_eq!(read(&r, "e.src"), "00-00-00-00-00-01\n");
    assert!(write(&r, "e.dst", "nonsense").is_err());
}

#[test]
fn etherencap_keywords_and_bad_arguments() {
    let t = Tmp::new("etherencap-kw");
    let out = t.file("out.pcap");
    run(
        &format!(
            "InfiniteSource(DATA x, LIMIT 1, STOP true)
               -> EtherEncap(DST 2:2:2:2:2:2, SRC 1:1:1:1:1:1, ETHERTYPE 0x0806) -> ToDump({out})"
        ),
        RouterOptions::default(),
    );
    assert_eq!(
        frames(&out),
        vec![bytes("020202020202 010101010101 0806 78")]
    );
    let e = build(
        "Idle -> EtherEncap(0x10000, 1:1:1:1:1:1, 2:2:2:2:2:2) -> Discard",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("ETHERTYPE"), "{e}");
    let e = build(
        "Idle -> EtherEncap(0x800, 1:1:1:1:1, 2:2:2:2:2:2) -> Discard",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("SRC"), "{e}");
}

// -------------------------------------------------------------- EtherRewrite

#[test]
fn etherrewrite_replaces_addresses_and_keeps_type() {
    let t = Tmp::new("etherrewrite");
    let out = t.file("out.pcap");
    let frame = bytes("ffffffffffff 000000000001 86dd 0102");
    let r = run(
        &format!(
            "InfiniteSource(DATA {}, LIMIT 1, STOP true)
               -> w :: EtherRewrite(1:1:1:1:1:1, 2:2:2:2:2:2) -> ToDump({out});
             InfiniteSource(DATA {}, LIMIT 2, STOP false) -> w2 :: EtherRewrite(1:1:1:1:1:1, 2:2:2:2:2:2)
               -> c :: Counter -> Discard",
            hex(&frame),
            hex(&[1, 2, 3])
        ),
        RouterOptions::default(),
    );
    assert_eq!(
        frames(&out),
        vec![bytes("020202020202 010101010101 86dd 0102")]
    );
    assert_eq!(read(&r, "w.src"), "01-01-01-01-01-01\n");
    // Packets shorter than an Ethernet header are dropped.
    assert_eq!(read(&r, "c.count"), "0\n");
}

// ------------------------------------------------------------ EtherVLANEncap

#[test]
fn ethervlanencap_tags_with_id_and_priority() {
    let t = Tmp::new("vlan");
    let (a, b, c, d) = (t.file("a"), t.file("b"), t.file("c"), t.file("d"));
    let r = run(
        &format!(
            "s :: InfiniteSource(DATA \\<ee>, LIMIT 1, STOP true) -> v :: EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 5, VLAN_PCP 3) -> ToDump({a});
             InfiniteSource(DATA \\<ee>, LIMIT 1) -> EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 0x1234) -> ToDump({b});
             InfiniteSource(DATA \\<ee>, LIMIT 1) -> EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> ToDump({c});
             InfiniteSource(DATA \\<ee>, LIMIT 1) -> EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, NATIVE_VLAN -1) -> ToDump({d})"
        ),
        RouterOptions::default(),
    );
    assert_eq!(
        frames(&a),
        vec![bytes("020202020202 010101010101 8100 6005 0800 ee")]
    );
    assert_eq!(
        frames(&b),
        vec![bytes("020202020202 010101010101 8100 1234 0800 ee")]
    );
    // VLAN ID 0 equals the default NATIVE_VLAN 0: a plain Ethernet header.
    assert_eq!(frames(&c), vec![bytes("020202020202 010101010101 0800 ee")]);
    assert_eq!(
        frames(&d),
        vec![bytes("020202020202 010101010101 8100 0000 0800 ee")]
    );
    assert_eq!(read(&r, "v.vlan_tci"), "24581\n");
    assert_eq!(read(&r, "v.vlan_id"), "5\n");
    assert_eq!(read(&r, "v.vlan_pcp"), "3\n");
    assert_eq!(read(&r, "v.ethertype"), "2048\n");
    let e = build(
        "Idle -> EtherVLANEncap(0x800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_PCP 8) -> Discard",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("VLAN_PCP"), "{e}");
}

// -------------------------------------------------------------- ARPResponder

fn arp_request(sha: &str, spa: [u8; 4], tpa: [u8; 4], pad: usize) -> Vec<u8> {
    let mut v = bytes(&format!(
        "ffffffffffff {sha} 0806 0001 0800 06 04 0001 {sha}"
    ));
    v.extend_from_slice(&spa);
    v.extend_from_slice(&[0; 6]);
    v.extend_from_slice(&tpa);
    v.resize(v.len() + pad, 0);
    v
}

#[test]
fn arpresponder_answers_requests_for_its_prefixes() {
    let t = Tmp::new("arpresp");
    let (out, other) = (t.file("out.pcap"), t.file("other.pcap"));
    let hit = arp_request("000000000001", [10, 0, 0, 1], [10, 0, 0, 5], 18);
    let host = arp_request("000000000001", [10, 0, 0, 1], [10, 0, 0, 7], 0);
    let miss = arp_request("000000000001", [10, 0, 0, 1], [10, 0, 1, 5], 0);
    let mut reply = hit.clone();
    reply[20] = 2; // make the request a reply: not a request, not answered
    let r = run(
        &format!(
            "ar :: ARPResponder(10.0.0.0/24 00:00:00:00:00:aa, 10.0.0.7 00-00-00-00-00-BB);
             InfiniteSource(DATA {}, LIMIT 1) -> ar;
             InfiniteSource(DATA {}, LIMIT 1) -> ar;
             InfiniteSource(DATA {}, LIMIT 1) -> ar;
             InfiniteSource(DATA {}, LIMIT 1, STOP true) -> ar;
             ar[0] -> ToDump({out}); ar[1] -> c :: Counter -> ToDump({other})",
            hex(&hit),
            hex(&host),
            hex(&miss),
            hex(&reply)
        ),
        RouterOptions::default(),
    );
    let want_hit = bytes(
        "000000000001 0000000000aa 0806 0001 0800 06 04 0002
         0000000000aa 0a000005 000000000001 0a000001",
    );
    let want_host = bytes(
        "000000000001 0000000000bb 0806 0001 0800 06 04 0002
         0000000000bb 0a000007 000000000001 0a000001",
    );
    assert_eq!(frames(&out), vec![want_hit, want_host]);
    assert_eq!(frames(&other), vec![miss, reply]);
    assert_eq!(read(&r, "c.count"), "2\n");
    assert_eq!(
        read(&r, "ar.table"),
        "10.0.0.7/32 00-00-00-00-00-BB\n10.0.0.0/24 00-00-00-00-00-AA\n"
    );
    write(&r, "ar.add", "10.0.0.0/16 00:00:00:00:00:cc").unwrap();
    write(&r, "ar.remove", "10.0.0.7").unwrap();
    assert_eq!(
        read(&r, "ar.table"),
        "10.0.0.0/24 00-00-00-00-00-AA\n10.0.0.0/16 00-00-00-00-00-CC\n"
    );
    assert!(write(&r, "ar.remove", "10.9.0.0/16")
        .unwrap_err()
        .contains("not found"));
}

#[test]
fn arpresponder_rejects_bad_entries() {
    for (conf, msg) in [
        ("10.0.0.1", "argument 0: missing ETH"),
        ("00:00:00:00:00:01", "argument 0: missing IP/MASK"),
        ("10.0.0.1 1:1:1:1:1:1 2:2:2:2:2:2", "more than one ETH"),
        (
            "10.0.0.1 1:1:1:1:1:1, bogus",
            "argument 1: expected IP/MASK ETH",
        ),
    ] {
        let e = build(
            &format!("Idle -> ARPResponder({conf}) -> Discard"),
            RouterOptions::default(),
        )
        .err()
        .unwrap();
        assert!(e.contains(msg), "{conf}: {e}");
    }
}

// ---------------------------------------------------------------- ARPQuerier

const MY_ETH: &str = "000000000001";

fn arp_reply(sha: &str, spa: [u8; 4]) -> Vec<u8> {
    let mut v = bytes(&format!("{MY_ETH} {sha} 0806 0001 0800 06 04 0002 {sha}"));
    v.extend_from_slice(&spa);
    v.extend_from_slice(&bytes(MY_ETH));
    v.extend_from_slice(&[10, 0, 0, 1]);
    v
}

fn ip_packet(id: u16, dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    // IPEncap(4, 10.0.0.1, DST): TTL 250, protocol 4.
    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 250, 4, 0, 0, 10, 0, 0, 1];
    h.extend_from_slice(&dst);
    let len = (20 + payload.len()) as u16;
    h[2..4].copy_from_slice(&len.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    let c = linerate_wire::checksum::compute(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

#[test]
fn arpquerier_queues_queries_and_sends_on_reply() {
    let t = Tmp::new("arpq");
    let (out, qf) = (t.file("out.pcap"), t.file("q.pcap"));
    let reply = arp_reply("000000000002", [10, 0, 0, 2]);
    let r = run(
        &format!(
            "InfiniteSource(DATA \\<0102>, LIMIT 3) -> IPEncap(4, 10.0.0.1, 10.0.0.2) -> q :: ARPQuerier(10.0.0.1, 00:00:00:00:00:01);
             TimedSource(0.05, DATA {}, LIMIT 1, STOP true) -> [1]q;
             q[0] -> ToDump({out}); q[1] -> ToDump({qf})",
            hex(&reply)
        ),
        sim(),
    );
    let mut want = Vec::new();
    for id in 0..3 {
        let mut f = bytes("000000000002 000000000001 0800");
        f.extend(ip_packet(id, [10, 0, 0, 2], &[1, 2]));
        assert!(ip_checksum_ok(&f[14..]));
        want.push(f);
    }
    assert_eq!(frames(&out), want);
    // One query: the next two packets came within 100 ms.
    assert_eq!(
        frames(&qf),
        vec![bytes(
            "ffffffffffff 000000000001 0806 0001 0800 06 04 0001
             000000000001 0a000001 000000000000 0a000002"
        )]
    );
    assert_eq!(read(&r, "q.queries"), "1\n");
    assert_eq!(read(&r, "q.responses"), "1\n");
    assert_eq!(read(&r, "q.count"), "1\n");
    assert_eq!(read(&r, "q.length"), "0\n");
    assert_eq!(read(&r, "q.drops"), "0\n");
    assert_eq!(
        read(&r, "q.table"),
        "10.0.0.2 1 00-00-00-00-00-02 0.000000\n"
    );
    assert_eq!(
        read(&r, "q.stats"),
        "0 packets killed\n1 ARP queries sent\n"
    );
}

#[test]
fn arpquerier_known_broadcast_multicast_and_zero() {
    let t = Tmp::new("arpq-special");
    let out = t.file("out.pcap");
    let r = run(
        &format!(
            "q :: ARPQuerier(10.0.0.1/24, 00:00:00:00:00:01);
             InfiniteSource(DATA \\<01>, LIMIT 1) -> IPEncap(4, 10.0.0.1, 10.0.0.255) -> q;
             InfiniteSource(DATA \\<02>, LIMIT 1) -> IPEncap(4, 10.0.0.1, 255.255.255.255) -> q;
             InfiniteSource(DATA \\<03>, LIMIT 1) -> IPEncap(4, 10.0.0.1, 224.129.2.3) -> q;
             InfiniteSource(DATA \\<04>, LIMIT 1, STOP true) -> q;
             Idle -> [1]q; q -> ToDump({out})"
        ),
        sim(),
    );
    let f = frames(&out);
    assert_eq!(f.len(), 3, "{f:?}");
    let heads: Vec<(&[u8], u8)> = f.iter().map(|x| (&x[..14], x[x.len() - 1])).collect();
    let b = bytes("ffffffffffff 000000000001 0800");
    let m = bytes("01005e010203 000000000001 0800");
    assert!(heads.contains(&(&b[..], 1)));
    assert!(heads.contains(&(&b[..], 2)));
    assert!(heads.contains(&(&m[..], 3)));
    // The packet without a destination annotation is dropped.
    assert_eq!(read(&r, "q.drops"), "1\n");
    assert_eq!(read(&r, "q.queries"), "0\n");
    assert_eq!(read(&r, "q.broadcast"), "10.0.0.255\n");
    assert_eq!(read(&r, "q.ipaddr"), "10.0.0.1\n");
}

#[test]
fn arpquerier_single_output_and_inserted_entries() {
    let t = Tmp::new("arpq-one");
    let out = t.file("out.pcap");
    let mut r = build(
        &format!(
            "q :: ARPQuerier(10.0.0.1, 00:00:00:00:00:01);
             s :: TimedSource(0.5, DATA \\<07>, LIMIT 2, STOP true) -> IPEncap(4, 10.0.0.1, 10.0.0.9) -> q;
             Idle -> [1]q; q -> ToDump({out})"
        ),
        sim(),
    )
    .unwrap();
    write(&r, "q.insert", "10.0.0.9 00:00:00:00:00:09").unwrap();
    r.run();
    // Entry inserted by hand: no query, both packets sent directly.
    let f = frames(&out);
    assert_eq!(f.len(), 2);
    assert_eq!(&f[0][..14], &bytes("000000000009 000000000001 0800")[..]);
    assert_eq!(read(&r, "q.queries"), "0\n");
    assert_eq!(read(&r, "q.count"), "1\n");
    write(&r, "q.delete", "10.0.0.9").unwrap();
    assert!(read(&r, "q.table").starts_with("10.0.0.9 0 FF-FF-FF-FF-FF-FF "));
    write(&r, "q.clear", "").unwrap();
    assert_eq!(read(&r, "q.count"), "0\n");
    assert!(write(&r, "q.insert", "10.0.0.9").is_err());
}

#[test]
fn arpquerier_retries_on_simulated_time() {
    // One packet, no reply: queries every 100 ms until 10 are unanswered,
    // then every 2 s. The run lasts 2 simulated seconds.
    let t = Tmp::new("arpq-retry");
    let qf = t.file("q.pcap");
    let r = run(
        &format!(
            "InfiniteSource(DATA \\<01>, LIMIT 1) -> IPEncap(4, 10.0.0.1, 10.0.0.3) -> q :: ARPQuerier(10.0.0.1, 00:00:00:00:00:01);
             Idle -> [1]q; q[0] -> Discard; q[1] -> ToDump({qf});
             TimedSource(1s, LIMIT 2, STOP true) -> Discard"
        ),
        sim(),
    );
    assert_eq!(read(&r, "q.queries"), "10\n");
    assert_eq!(read(&r, "q.length"), "1\n");
    let f = frames(&qf);
    assert_eq!(f.len(), 10);
    assert!(f.iter().all(|x| x == &f[0]));
}

#[test]
fn arpquerier_capacity_drops_oldest_packets() {
    let r = run(
        "InfiniteSource(DATA \\<01>, LIMIT 10, STOP true) -> IPEncap(4, 10.0.0.1, 10.0.0.3)
           -> q :: ARPQuerier(10.0.0.1, 00:00:00:00:00:01, CAPACITY 4); Idle -> [1]q; q -> Discard",
        sim(),
    );
    // Over capacity the queue is cut to CAPACITY - CAPACITY/2 = 2, then grows.
    let len: usize = read(&r, "q.length").trim().parse().unwrap();
    assert!((2..=4).contains(&len), "{len}");
    assert_eq!(
        read(&r, "q.stats"),
        format!("{} packets killed\n1 ARP queries sent\n", 10 - len)
    );
    let e = build(
        "Idle -> q :: ARPQuerier(10.0.0.1, 00:00:00:00:00:01, CAPACITY_SLIM_FACTOR 0) -> Discard; Idle -> [1]q",
        RouterOptions::default(),
    );
    assert!(e
        .err()
        .unwrap()
        .contains("CAPACITY_SLIM_FACTOR cannot be zero"));
}

// ------------------------------------------------------- IP encapsulation

#[test]
fn ipencap_writes_header_and_checksum() {
    let t = Tmp::new("ipencap");
    let out = t.file("out.pcap");
    let r = run(
        &format!(
            "InfiniteSource(DATA \\<01020304>, LIMIT 2, STOP true)
               -> e :: IPEncap(4, 18.26.4.24, 140.247.60.147) -> ToDump({out}, ENCAP IP)"
        ),
        RouterOptions::default(),
    );
    let f = frames(&out);
    assert_eq!(
        f,
        vec![
            bytes("4500 0018 0000 0000 fa04 e125 121a0418 8cf73c93 01020304"),
            bytes("4500 0018 0001 0000 fa04 e124 121a0418 8cf73c93 01020304"),
        ]
    );
    assert!(f.iter().all(|p| ip_checksum_ok(p)));
    assert_eq!(read(&r, "e.src"), "18.26.4.24\n");
    assert_eq!(read(&r, "e.dst"), "140.247.60.147\n");
}

#[test]
fn ipencap_keywords() {
    let t = Tmp::new("ipencap-kw");
    let (a, b) = (t.file("a"), t.file("b"));
    run(
        &format!(
            "InfiniteSource(DATA \\<00>, LIMIT 1) -> IPEncap(udp, 1.0.0.1, 2.0.0.2, TTL 64, DSCP 46, ECT 2, DF true) -> ToDump({a}, ENCAP IP);
             InfiniteSource(DATA \\<00>, LIMIT 1, STOP true) -> IPEncap(tcp, 1.0.0.1, 2.0.0.2, TOS 0x10, CE false) -> ToDump({b}, ENCAP IP)"
        ),
        RouterOptions::default(),
    );
    let a = &frames(&a)[0];
    assert_eq!(&a[..2], &[0x45, 46 << 2 | 2]);
    assert_eq!(&a[6..10], &[0x40, 0x00, 64, 17]);
    assert!(ip_checksum_ok(a));
    let b = &frames(&b)[0];
    assert_eq!(&b[..2], &[0x45, 0x10]);
    assert_eq!(&b[6..10], &[0x00, 0x00, 250, 6]);
    assert!(ip_checksum_ok(b));
    for (conf, msg) in [
        (
            "4, 1.0.0.1, 2.0.0.2, TOS 1, DSCP 1",
            "cannot set both TOS and DSCP",
        ),
        ("4, 1.0.0.1, 2.0.0.2, ECT 1, CE 1", "at most one ECN option"),
        ("4, 1.0.0.1, 2.0.0.2, DSCP 64", "DSCP too large"),
        ("300, 1.0.0.1, 2.0.0.2", "bad IP protocol"),
        ("4, 1.0.0.1, 2.0.0", "DST"),
    ] {
        let e = build(
            &format!("Idle -> IPEncap({conf}) -> Discard"),
            RouterOptions::default(),
        )
        .err()
        .unwrap();
        assert!(e.contains(msg), "{conf}: {e}");
    }
}

#[test]
fn udpipencap_writes_both_headers_with_checksums() {
    let t = Tmp::new("udpip");
    let (out, nock) = (t.file("out.pcap"), t.file("nock.pcap"));
    let r = run(
        &format!(
            "InfiniteSource(DATA ab, LIMIT 1) -> u :: UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 5678) -> ToDump({out}, ENCAP IP);
             InfiniteSource(DATA ab, LIMIT 1, STOP true) -> UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 5678, false) -> ToDump({nock}, ENCAP IP)"
        ),
        RouterOptions::default(),
    );
    let f = frames(&out);
    assert_eq!(
        f,
        vec![bytes(
            "4500 001e 0000 0000 fa11 bdcc 01000001 02000002 04d2 162e 000a 8075 6162"
        )]
    );
    assert!(ip_checksum_ok(&f[0]));
    let pair = linerate_wire::IpPair::V4 {
        src: "1.0.0.1".parse().unwrap(),
        dst: "2.0.0.2".parse().unwrap(),
    };
    let udp = linerate_wire::udp::Packet::new_checked(&f[0][20..]).unwrap();
    assert!(udp.verify_checksum(&pair));
    assert_eq!(
        frames(&nock),
        vec![bytes(
            "4500 001e 0000 0000 fa11 bdcc 01000001 02000002 04d2 162e 000a 0000 6162"
        )]
    );
    assert_eq!(read(&r, "u.sport"), "1234\n");
    assert_eq!(read(&r, "u.dport"), "5678\n");
    assert_eq!(read(&r, "u.dst"), "2.0.0.2\n");
}

#[test]
fn udpipencap_dst_anno_takes_the_annotation() {
    let t = Tmp::new("udpip-anno");
    let out = t.file("out.pcap");
    run(
        &format!(
            "InfiniteSource(DATA ab, LIMIT 1, STOP true) -> IPEncap(4, 9.9.9.9, 3.0.0.3)
               -> UDPIPEncap(1.0.0.1, 1, DST_ANNO, 2) -> ToDump({out}, ENCAP IP)"
        ),
        RouterOptions::default(),
    );
    let f = frames(&out);
    assert_eq!(&f[0][16..20], &[3, 0, 0, 3]);
    assert_eq!(f[0].len(), 28 + 20 + 2);
    assert!(ip_checksum_ok(&f[0]));
}

#[test]
fn icmppingencap_builds_echo_requests() {
    let t = Tmp::new("ping");
    let out = t.file("out.pcap");
    let r = run(
        &format!(
            "InfiniteSource(DATA \\<dead>, LIMIT 2, STOP true)
               -> i :: ICMPPingEncap(10.0.0.1, 10.0.0.2, IDENTIFIER 0x0102) -> ToDump({out}, ENCAP IP)"
        ),
        RouterOptions::default(),
    );
    let f = frames(&out);
    assert_eq!(
        f[0],
        bytes("4500 001e 0001 0000 ff01 a7db 0a000001 0a000002 0800 1651 0201 0100 dead")
    );
    // Second packet: IP ID and sequence 2.
    assert_eq!(&f[1][4..6], &[0, 2]);
    assert_eq!(&f[1][26..28], &[2, 0]);
    for p in &f {
        assert!(ip_checksum_ok(p));
        let icmp = linerate_wire::icmpv4::Packet::new_checked(&p[20..]).unwrap();
        assert!(icmp.verify_checksum());
    }
    assert_eq!(read(&r, "i.src"), "10.0.0.1\n");
    assert_eq!(read(&r, "i.dst"), "10.0.0.2\n");
}

#[test]
fn encapsulation_sets_annotations_for_arp() {
    // UDPIPEncap's DST_IP annotation drives ARPQuerier, as in a Click router.
    let t = Tmp::new("chain");
    let out = t.file("out.pcap");
    run(
        &format!(
            "InfiniteSource(DATA x, LIMIT 1, STOP true) -> UDPIPEncap(10.0.0.1, 7, 10.0.0.255, 7)
               -> q :: ARPQuerier(10.0.0.1/24, 00:00:00:00:00:01) -> ToDump({out}); Idle -> [1]q"
        ),
        RouterOptions::default(),
    );
    let f = frames(&out);
    assert_eq!(&f[0][..14], &bytes("ffffffffffff 000000000001 0800")[..]);
    assert_eq!(f[0].len(), 14 + 28 + 1);
}
