//! IPFIXExport and NetFlowV9Export: flow-record packets in, IPFIX / NetFlow
//! v9 out (UDP to a socket the test owns, or a file), decoded with
//! `linerate_wire` and compared field by field.

mod common;

use common::{decode_ipfix, field, ipfix_file_messages, run};
use linerate_elements::flow::record::{end_reason, Direction, FlowRecord};
use linerate_io::pcap::{LinkType, PcapWriter};
use linerate_runtime::flow::{map_v4, FlowKey};
use linerate_runtime::{Router, RouterOptions};
use linerate_wire::{ipfix, netflow9};
use proptest::prelude::*;
use std::collections::HashMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn read(r: &Router, h: &str) -> String {
    r.handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"))
        .trim_end()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-flowexp-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Write records (and raw extra packets) into a pcap for FromDump.
fn records_pcap(name: &str, recs: &[FlowRecord], extra: &[&[u8]]) -> PathBuf {
    let path = tmp(name);
    let mut w = PcapWriter::create(&path, LinkType::ETHERNET, 0, true).unwrap();
    for (i, r) in recs.iter().enumerate() {
        let b = r.as_bytes();
        w.write(1_000 + i as u64, b.len() as u32, b).unwrap();
    }
    for (i, b) in extra.iter().enumerate() {
        w.write(9_000 + i as u64, b.len() as u32, b).unwrap();
    }
    w.flush().unwrap();
    path
}

const T0: u64 = 1_353_690_000_000_000_000; // 2012-11-23 17:00:00 UTC

fn dir(packets: u64, bytes: u64, first_ns: u64, last_ns: u64) -> Direction {
    Direction {
        packets,
        bytes,
        first_ns,
        last_ns,
        min_iat_ns: 1_500,
        max_iat_ns: 2_000_000,
        min_len: 40,
        max_len: 1500,
        first_len: 60,
        second_len: 52,
        tcp_flags: 0x1b,
        tos: 0x10,
        min_ttl: 60,
        max_ttl: 64,
        _pad: [0; 4],
    }
}

fn tcp4() -> FlowRecord {
    let mut r = FlowRecord::new();
    r.key = FlowKey {
        src: map_v4([10, 0, 0, 1]),
        dst: map_v4([10, 0, 0, 2]),
        sport: 1234,
        dport: 80,
        proto: 6,
        version: 4,
    };
    r.vlan = 7;
    r.end_reason = end_reason::END_OF_FLOW;
    r.fwd = dir(10, 1000, T0 + 123_456_789, T0 + 4_567_891_234);
    r
}

fn udp6_biflow() -> FlowRecord {
    let mut r = FlowRecord::new();
    let mut s = [0u8; 16];
    s[0] = 0x20;
    s[1] = 0x01;
    s[15] = 1;
    let mut d = s;
    d[15] = 2;
    r.key = FlowKey {
        src: s,
        dst: d,
        sport: 5353,
        dport: 53,
        proto: 17,
        version: 6,
    };
    r.biflow = 1;
    r.end_reason = end_reason::FORCED_END;
    r.fwd = dir(2, 150, T0 + 1_000_000_000, T0 + 1_000_500_000);
    r.rev = dir(3, 450, T0 + 1_000_200_000, T0 + 2_000_000_000);
    r.fwd.tcp_flags = 0;
    r.rev.tcp_flags = 0;
    r
}

fn icmp4() -> FlowRecord {
    let mut r = FlowRecord::new();
    r.key = FlowKey {
        src: map_v4([192, 0, 2, 1]),
        dst: map_v4([192, 0, 2, 9]),
        sport: 0x1234,
        dport: 0x0800,
        proto: 1,
        version: 4,
    };
    r.end_reason = end_reason::IDLE_TIMEOUT;
    r.fwd = dir(4, 336, T0 + 3_000_000_000, T0 + 6_000_000_000);
    r.fwd.tcp_flags = 0;
    r
}

fn recv_all(sock: &UdpSocket) -> Vec<Vec<u8>> {
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut v = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = sock.recv(&mut buf) {
        v.push(buf[..n].to_vec());
    }
    v
}

/// Run `FromDump(input, STOP true) -> e :: ELEMENT;`.
fn export(input: &Path, element: &str) -> Router {
    run(
        &format!(
            "FromDump({}, STOP true) -> e :: {element};",
            input.display()
        ),
        RouterOptions::default(),
    )
}

fn listener() -> (UdpSocket, String) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_nonblocking(false).unwrap();
    let a = s.local_addr().unwrap().to_string();
    (s, a)
}

#[test]
fn ipfix_over_udp_decodes_field_by_field() {
    let recs = [tcp4(), udp6_biflow(), icmp4()];
    let f = records_pcap("ipfix1.pcap", &recs, &[b"not a record"]);
    let (sock, addr) = listener();
    let r = export(&f, &format!("IPFIXExport({addr}, DOMAIN 42)"));
    assert_eq!(read(&r, "e.records"), "3");
    assert_eq!(read(&r, "e.ignored"), "1");
    assert_eq!(read(&r, "e.dropped"), "0");
    let msgs = recv_all(&sock);
    assert_eq!(read(&r, "e.messages"), msgs.len().to_string());
    let bytes: usize = msgs.iter().map(Vec::len).sum();
    assert_eq!(read(&r, "e.bytes"), bytes.to_string());
    let ix = decode_ipfix(&msgs);
    let time = |m: &Vec<u8>| u32::from_be_bytes(m[4..8].try_into().unwrap());
    // Export time: the flow clock's second (the latest flow end so far):
    // the first record's (4 s) for a message filled before the last record,
    // the last's (6 s) at the end.
    assert_eq!(time(msgs.last().unwrap()), (T0 / 1_000_000_000 + 6) as u32);
    for m in &msgs {
        assert_eq!(u32::from_be_bytes(m[12..16].try_into().unwrap()), 42);
        let t = time(m) - (T0 / 1_000_000_000) as u32;
        assert!((4..=6).contains(&t), "export time {t} s");
    }
    let ids: Vec<u16> = {
        let mut v: Vec<u16> = ix.templates.keys().copied().collect();
        v.sort();
        v
    };
    assert_eq!(ids, [256, 257, 258, 259, 260, 261]);
    let flows: Vec<_> = ix.data.iter().filter(|d| d.0 < 260).collect();
    assert_eq!(flows.len(), 3);
    let (a, b, c) = (flows[0], flows[1], flows[2]);
    assert_eq!((a.0, b.0, c.0), (256, 259, 256));
    // IPv4 TCP.
    assert_eq!(&a.1[0..8], &[10, 0, 0, 1, 10, 0, 0, 2]);
    assert_eq!(field(&ix, a, 0, 7), 1234);
    assert_eq!(field(&ix, a, 0, 11), 80);
    assert_eq!(field(&ix, a, 0, 4), 6);
    assert_eq!(field(&ix, a, 0, 60), 4);
    assert_eq!(field(&ix, a, 0, 58), 7);
    assert_eq!(field(&ix, a, 0, 136), 3);
    assert_eq!(field(&ix, a, 0, 1), 1000);
    assert_eq!(field(&ix, a, 0, 2), 10);
    assert_eq!(field(&ix, a, 0, 152), T0 / 1_000_000 + 123);
    assert_eq!(field(&ix, a, 0, 153), T0 / 1_000_000 + 4567);
    let us = field(&ix, a, 0, 154);
    assert_eq!(us >> 32, T0 / 1_000_000_000 + 2_208_988_800);
    assert_eq!(((us & 0xffff_ffff) * 1_000_000 + (1 << 31)) >> 32, 123_456);
    let ue = field(&ix, a, 0, 155);
    assert_eq!(((ue & 0xffff_ffff) * 1_000_000 + (1 << 31)) >> 32, 567_891);
    assert_eq!(field(&ix, a, 0, 6), 0x1b);
    assert_eq!(field(&ix, a, 0, 5), 0x10);
    assert_eq!((field(&ix, a, 0, 25), field(&ix, a, 0, 26)), (40, 1500));
    assert_eq!((field(&ix, a, 0, 52), field(&ix, a, 0, 53)), (60, 64));
    assert_eq!(field(&ix, a, 32473, 1), 1_500);
    assert_eq!(field(&ix, a, 32473, 2), 2_000_000);
    assert_eq!((field(&ix, a, 32473, 3), field(&ix, a, 32473, 4)), (60, 52));
    // IPv6 biflow: reverse elements, reverse timestamps, biflowDirection.
    assert_eq!(b.1[0..2], [0x20, 0x01]);
    assert_eq!(field(&ix, b, 0, 2), 2);
    assert_eq!(field(&ix, b, 29305, 2), 3);
    assert_eq!(field(&ix, b, 29305, 1), 450);
    assert_eq!(field(&ix, b, 29305, 152), T0 / 1_000_000 + 1000);
    assert_eq!(field(&ix, b, 29305, 153), T0 / 1_000_000 + 2000);
    assert_eq!(field(&ix, b, 32473, 0x4003), 60);
    assert_eq!(field(&ix, b, 0, 239), 1);
    assert_eq!(field(&ix, b, 0, 136), 4);
    // ICMP: type/code in icmpTypeCodeIPv4, ports zero, the echo identifier
    // in linerate's element 5 (0 for other protocols).
    assert_eq!(field(&ix, c, 0, 32), 0x0800);
    assert_eq!((field(&ix, c, 0, 7), field(&ix, c, 0, 11)), (0, 0));
    assert_eq!(field(&ix, c, 32473, 5), 0x1234);
    assert_eq!((field(&ix, a, 32473, 5), field(&ix, b, 32473, 5)), (0, 0));
    // RFC 5610 type records for the five enterprise elements.
    let types: Vec<_> = ix.data.iter().filter(|d| d.0 == 261).collect();
    assert_eq!(types.len(), 5);
    assert_eq!(&types[4].1[0..6], &[0, 0, 0x7e, 0xd9, 0, 5]);
    assert_eq!(&types[4].1[6..10], &[2, 4, 0, 0]);
    assert_eq!(&types[4].1[11..], b"icmpEchoIdentifier".as_slice());
    assert_eq!(&types[0].1[0..6], &[0, 0, 0x7e, 0xd9, 0, 1]);
    assert_eq!(&types[0].1[6..10], &[4, 1, 0, 8]);
    assert_eq!(
        &types[0].1[11..],
        b"minimumInterArrivalTimeNanoseconds".as_slice()
    );
    // Statistics: sent with the templates and at the end.
    let stats: Vec<_> = ix.data.iter().filter(|d| d.0 == 260).collect();
    assert_eq!(stats.len(), 2);
    let last = stats[1];
    assert_eq!(field(&ix, last, 0, 144), 42);
    assert_eq!(field(&ix, last, 0, 42), 3);
    assert_eq!(field(&ix, last, 0, 164), 1);
    assert_eq!(field(&ix, last, 0, 166), 0);
    // Sequence numbers count data records sent before each message.
    let mut seq = 0;
    for &(s, n, _) in &ix.msgs {
        assert_eq!(s, seq);
        seq += n;
    }
    assert_eq!(read(&r, "e.sequence"), seq.to_string());
}

fn many(n: usize) -> Vec<FlowRecord> {
    (0..n)
        .map(|i| {
            let mut r = if i % 3 == 1 { udp6_biflow() } else { tcp4() };
            r.key.sport = i as u16;
            r.fwd.packets = i as u64 + 1;
            r.fwd.last_ns = T0 + i as u64 * 100_000_000; // 0.1 s apart
            r
        })
        .collect()
}

#[test]
fn ipfix_messages_stay_under_the_mtu_and_templates_are_resent() {
    let recs = many(300);
    let f = records_pcap("ipfix2.pcap", &recs, &[]);
    let (r, msgs) = ipfix_file(&f, "MTU 512, TEMPLATE_INTERVAL 10s, TEMPLATE_PACKETS 0");
    assert_eq!(read(&r, "e.messages"), msgs.len().to_string());
    let ix = decode_ipfix(&msgs);
    assert!(ix.msgs.iter().all(|m| m.2 <= 512), "{:?}", ix.msgs);
    let flows = ix.data.iter().filter(|d| d.0 < 260).count();
    assert_eq!(flows, 300);
    let pk: u64 = ix
        .data
        .iter()
        .filter(|d| d.0 < 260)
        .map(|d| field(&ix, d, 0, 2))
        .sum();
    assert_eq!(pk, (1..=300).sum::<u64>());
    // 30 s of flow clock with a 10 s interval: sent at 0, 10, 20 s.
    assert_eq!(ix.template_sends, 3);
    let mut seq = 0;
    for &(s, n, _) in &ix.msgs {
        assert_eq!(s, seq);
        seq += n;
    }
    // By message count: at most 10 messages between template sends.
    let (_, msgs) = ipfix_file(&f, "MTU 512, TEMPLATE_INTERVAL 1h, TEMPLATE_PACKETS 10");
    let with_templates: Vec<usize> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            let p = ipfix::Packet::new_checked(&m[..]).unwrap();
            p.sets()
                .any(|s| s.unwrap().set_id() == ipfix::TEMPLATE_SET_ID)
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(with_templates[0], 0);
    assert!(
        with_templates.windows(2).all(|w| w[1] - w[0] <= 11),
        "{with_templates:?}"
    );
    assert!(
        with_templates.len() >= msgs.len() / 11,
        "{with_templates:?}"
    );
}

/// Run IPFIXExport into a file with extra keywords; the router and the
/// messages (the file split by the messages' length fields).
fn ipfix_file(input: &Path, kw: &str) -> (Router, Vec<Vec<u8>>) {
    let name: String = kw.chars().filter(char::is_ascii_alphanumeric).collect();
    let out = tmp(&format!("ipfix-{name}.ipfix"));
    let r = export(
        input,
        &format!("IPFIXExport(FILENAME {}, {kw})", out.display()),
    );
    let msgs = ipfix_file_messages(&std::fs::read(&out).unwrap());
    (r, msgs)
}

/// Everything decoded from NetFlow v9 packets.
fn decode_v9(msgs: &[Vec<u8>]) -> (Vec<netflow9::Repr>, Vec<(u16, Vec<u8>)>) {
    let mut hdrs = Vec::new();
    let mut data = Vec::new();
    let mut lens: HashMap<u16, usize> = HashMap::new();
    for m in msgs {
        let p = netflow9::Packet::new_checked(&m[..]).unwrap();
        let h = netflow9::Repr::parse(&p).unwrap();
        let mut count = 0;
        for s in p.flowsets() {
            let s = s.unwrap();
            assert_eq!(s.len() % 4, 0, "FlowSets are padded to 4 bytes");
            let mut b = s.payload();
            match s.set_id() {
                0 => {
                    while b.len() >= 4 {
                        let t = netflow9::TemplateRecord::parse(b).unwrap();
                        lens.insert(t.id(), t.record_len());
                        b = &b[t.buffer_len()..];
                        count += 1;
                    }
                }
                1 => {
                    let t = netflow9::OptionsTemplateRecord::parse(b).unwrap();
                    let n = t
                        .scopes()
                        .chain(t.options())
                        .map(|f| usize::from(f.1))
                        .sum();
                    lens.insert(t.id(), n);
                    count += 1;
                }
                id => {
                    let n = lens[&id];
                    while b.len() >= n {
                        data.push((id, b[..n].to_vec()));
                        b = &b[n..];
                        count += 1;
                    }
                }
            }
        }
        assert_eq!(h.count, count);
        hdrs.push(h);
    }
    (hdrs, data)
}

#[test]
fn netflow_v9_over_udp() {
    let recs = [tcp4(), udp6_biflow(), icmp4()];
    let f = records_pcap("v9.pcap", &recs, &[]);
    let (sock, addr) = listener();
    let r = export(&f, &format!("NetFlowV9Export({addr}, DOMAIN 5)"));
    // The biflow becomes two one-way records.
    assert_eq!(read(&r, "e.records"), "4");
    let msgs = recv_all(&sock);
    let (hdrs, data) = decode_v9(&msgs);
    for (i, h) in hdrs.iter().enumerate() {
        assert_eq!(h.sequence, i as u32, "sequence counts packets");
        assert_eq!(h.source_id, 5);
        assert_eq!(u64::from(h.unix_secs), T0 / 1_000_000_000 + 6);
    }
    let boot = u64::from(hdrs[0].unix_secs) * 1000 - u64::from(hdrs[0].sys_uptime);
    assert_eq!(boot, T0 / 1_000_000 - 86_400_000);
    let flows: Vec<_> = data.iter().filter(|d| d.0 < 258).collect();
    assert_eq!(flows.len(), 4);
    let a = &flows[0].1;
    assert_eq!(&a[0..8], &[10, 0, 0, 1, 10, 0, 0, 2]);
    assert_eq!(u16::from_be_bytes([a[8], a[9]]), 1234);
    assert_eq!(u64::from_be_bytes(a[18..26].try_into().unwrap()), 1000);
    assert_eq!(u64::from_be_bytes(a[26..34].try_into().unwrap()), 10);
    let first = u64::from(u32::from_be_bytes(a[34..38].try_into().unwrap()));
    let last = u64::from(u32::from_be_bytes(a[38..42].try_into().unwrap()));
    assert_eq!(boot + first, T0 / 1_000_000 + 123);
    assert_eq!(boot + last, T0 / 1_000_000 + 4567);
    assert_eq!(a[46], 0x1b);
    // The reverse half of the biflow: reversed key, its own counters.
    let (f6, r6) = (&flows[1].1, &flows[2].1);
    assert_eq!((flows[1].0, flows[2].0), (257, 257));
    assert_eq!(&f6[0..16], &r6[16..32]);
    assert_eq!(u16::from_be_bytes([r6[32], r6[33]]), 53);
    assert_eq!(u64::from_be_bytes(r6[50..58].try_into().unwrap()), 3);
    // ICMP type/code.
    let c = &flows[3].1;
    assert_eq!(u16::from_be_bytes([c[14], c[15]]), 0x0800);
}

#[test]
fn pacing_spaces_datagrams() {
    let recs = many(200);
    let f = records_pcap("pace.pcap", &recs, &[]);
    let (sock, addr) = listener();
    let t = std::time::Instant::now();
    let r = export(&f, &format!("IPFIXExport({addr}, MTU 600, PACE 500)"));
    let n: u64 = read(&r, "e.messages").parse().unwrap();
    assert!(n > 40, "{n} messages");
    // The first 9 may leave at once (a burst of 8 after the first), then 2 ms apart.
    let min = Duration::from_millis(2 * (n - 9));
    assert!(t.elapsed() >= min, "{:?} < {min:?}", t.elapsed());
    assert_eq!(recv_all(&sock).len() as u64, n);
}

/// With `MTU 0`, messages fill the path MTU to the collector (65,536 on
/// loopback: capped at 65,000 bytes of UDP payload); with an MTU (1400 by
/// default), they keep under it; a file alone gets 1,400 with `MTU 0`.
#[test]
fn messages_fill_the_path_mtu_when_told() {
    let recs = many(2000);
    let f = records_pcap("pmtu.pcap", &recs, &[]);
    for (class, arg, want) in [
        ("IPFIXExport", ", MTU 0", 65_000),
        ("NetFlowV9Export", ", MTU 0", 65_000),
        ("IPFIXExport", "", 1400),
        ("NetFlowV9Export", ", MTU 9000", 9000),
    ] {
        let (sock, addr) = listener();
        let r = export(&f, &format!("{class}({addr}{arg})"));
        assert_eq!(read(&r, "e.mtu"), want.to_string(), "{class}{arg}");
        // The socket's buffer keeps the first datagrams (three of 64 KiB
        // in Linux's default buffer); the first is full.
        let msgs = recv_all(&sock);
        let largest = msgs.iter().map(Vec::len).max().unwrap_or(0);
        assert!(largest <= want, "{class}{arg}: {largest} > {want}");
        assert!(largest > want - 300, "{class}{arg}: {largest}");
    }
    let out = tmp("pmtu.ipfix");
    let r = export(
        &f,
        &format!("IPFIXExport(FILENAME {}, MTU 0)", out.display()),
    );
    assert_eq!(read(&r, "e.mtu"), "1400");
}

#[test]
fn bad_configurations_are_refused() {
    for (cfg, msg) in [
        ("IPFIXExport()", "COLLECTOR or FILENAME"),
        ("IPFIXExport(127.0.0.1:4739, MTU 100)", "MTU"),
        (
            "IPFIXExport(127.0.0.1:4739, ENTERPRISE 29305)",
            "ENTERPRISE",
        ),
        ("NetFlowV9Export(127.0.0.1:2055, IMPL slow)", "IMPL"),
    ] {
        let e = common::build(&format!("Idle -> {cfg}"), RouterOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{cfg} accepted"));
        assert!(e.contains(msg), "{cfg}: {e}");
    }
}

fn arb_dir() -> impl Strategy<Value = Direction> {
    (
        (0u64..1 << 40, 0u64..1 << 50, 0u64..1 << 62, 0u64..1 << 30),
        (any::<u64>(), any::<u64>()),
        (any::<u16>(), any::<u16>(), any::<u16>(), any::<u16>()),
        (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()),
    )
        .prop_map(
            |((p, b, f, dur), (mi, ma), (l1, l2, l3, l4), (fl, tos, t1, t2))| Direction {
                packets: p,
                bytes: b,
                first_ns: f,
                last_ns: f + dur,
                min_iat_ns: mi,
                max_iat_ns: ma,
                min_len: l1,
                max_len: l2,
                first_len: l3,
                second_len: l4,
                tcp_flags: fl,
                tos,
                min_ttl: t1,
                max_ttl: t2,
                _pad: [0; 4],
            },
        )
}

fn arb_record() -> impl Strategy<Value = FlowRecord> {
    (
        (any::<[u8; 16]>(), any::<[u8; 16]>(), any::<bool>()),
        (
            any::<u16>(),
            any::<u16>(),
            prop::sample::select(vec![1u8, 6, 17, 58, 132]),
        ),
        (any::<u16>(), 1u8..6, any::<bool>()),
        arb_dir(),
        arb_dir(),
    )
        .prop_map(
            |((s, d, v6), (sp, dp, proto), (vlan, reason, bi), fwd, rev)| {
                let mut r = FlowRecord::new();
                r.key = FlowKey {
                    src: if v6 {
                        s
                    } else {
                        map_v4([s[0], s[1], s[2], s[3]])
                    },
                    dst: if v6 {
                        d
                    } else {
                        map_v4([d[0], d[1], d[2], d[3]])
                    },
                    sport: sp,
                    dport: dp,
                    proto,
                    version: if v6 { 6 } else { 4 },
                };
                r.vlan = vlan;
                r.end_reason = reason;
                r.biflow = bi.into();
                r.fwd = fwd;
                if bi {
                    r.rev = rev;
                }
                r
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// IMPL fast and IMPL reference write identical files and handler values.
    #[test]
    fn fast_and_reference_agree(
        recs in prop::collection::vec(arb_record(), 0..60),
        mtu in 512u32..3000,
        interval in 1u64..100,
        v9 in any::<bool>(),
    ) {
        let case = std::thread::current().name().unwrap_or("t").replace("::", "_");
        let f = records_pcap(&format!("{case}-{}.pcap", recs.len()), &recs, &[b"junk"]);
        let class = if v9 { "NetFlowV9Export" } else { "IPFIXExport" };
        let mut outs = Vec::new();
        let mut hs = Vec::new();
        for imp in ["fast", "reference"] {
            let out = tmp(&format!("{case}-{imp}.out"));
            let r = export(
                &f,
                &format!("{class}(FILENAME {}, MTU {mtu}, TEMPLATE_INTERVAL {interval}ms, IMPL {imp})", out.display()),
            );
            outs.push(std::fs::read(&out).unwrap());
            std::fs::remove_file(&out).unwrap();
            hs.push(["records", "messages", "bytes", "ignored", "sequence"].map(|h| read(&r, &format!("e.{h}"))));
        }
        std::fs::remove_file(&f).unwrap();
        prop_assert_eq!(&outs[0], &outs[1]);
        prop_assert_eq!(&hs[0], &hs[1]);
        prop_assert_eq!(&hs[0][3], "1");
    }
}

#[test]
fn flow_export_picks_the_protocol() {
    let recs = [tcp4()];
    let f = records_pcap("fe.pcap", &recs, &[]);
    for (args, version) in [
        ("PROTOCOL v9, COLLECTOR {a}, ENTERPRISE 1", 9u16),
        ("{a}, PROTOCOL ipfix", 10),
        ("v9, {a}", 9),
        ("IPFIX, COLLECTOR {a}, IGNORED e.ignored", 10),
    ] {
        let (sock, addr) = listener();
        let args = args.replace("{a}", &addr);
        let r = export(&f, &format!("FlowExport({args})"));
        assert_eq!(read(&r, "e.records"), "1", "{args}");
        let msgs = recv_all(&sock);
        assert!(!msgs.is_empty());
        assert!(
            msgs.iter()
                .all(|m| u16::from_be_bytes([m[0], m[1]]) == version),
            "{args}"
        );
    }
    for (cfg, msg) in [
        ("FlowExport()", "PROTOCOL"),
        (
            "FlowExport(PROTOCOL v5, COLLECTOR 127.0.0.1:9)",
            "expected 'ipfix' or 'v9'",
        ),
        ("FlowExport(v9)", "COLLECTOR or FILENAME"),
    ] {
        let e = common::build(&format!("Idle -> {cfg}"), RouterOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{cfg} accepted"));
        assert!(e.contains(msg), "{cfg}: {e}");
    }
}

/// The flowmon pipeline (no timeouts, no TCP end) on the shared LAN trace,
/// exporting through an `IPFIXExport` named `e` with `export_args`.
fn lan_flowmon(export_args: &str) -> String {
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces/pathspider-real-lan2012.pcap");
    format!(
        "FromDump({}, STOP true) -> parse :: L4Parser
           -> fast :: MicroflowTable(TABLE 1MB, TCPEND false)
           -> agg :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false)
           -> e :: IPFIXExport({export_args});
         parse[1] -> fast;",
        trace.display()
    )
}

/// The whole flowmon pipeline on the LAN trace into an IPFIX file: the
/// README's reference totals, and the final statistics record carries the
/// aggregator's ignored count (ARP) through the IGNORED handler.
#[test]
fn lan_trace_pipeline_into_an_ipfix_file() {
    let out = tmp("lan.ipfix");
    let r = run(
        &lan_flowmon(&format!("FILENAME {}, IGNORED agg.ignored", out.display())),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "e.records"), "11978");
    let msgs = ipfix_file_messages(&std::fs::read(&out).unwrap());
    let ix = decode_ipfix(&msgs);
    let flows: Vec<_> = ix.data.iter().filter(|d| d.0 < 260).collect();
    assert_eq!(flows.len(), 11978);
    let pk: u64 = flows.iter().map(|d| field(&ix, d, 0, 2)).sum();
    let by: u64 = flows.iter().map(|d| field(&ix, d, 0, 1)).sum();
    assert_eq!((pk, by), (62_038, 3_718_480));
    let last = ix.data.iter().rfind(|d| d.0 == 260).unwrap();
    assert_eq!(field(&ix, last, 0, 42), 11978);
    assert_eq!(field(&ix, last, 0, 164), 743);
    assert_eq!(field(&ix, last, 0, 166), 0);
}

/// Two exporters with the same file and domain are one exporting process:
/// one file, one sequence-number space, messages in order.
#[test]
fn exporters_of_one_domain_share_the_sequence() {
    let recs = many(40);
    let f = records_pcap("shared.pcap", &recs, &[]);
    let out = tmp("shared.ipfix");
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> t :: Tee(2);
             t[0] -> a :: IPFIXExport(FILENAME {o}, MTU 600);
             t[1] -> b :: IPFIXExport(FILENAME {o}, MTU 600);",
            f.display(),
            o = out.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "a.records"), "40");
    assert_eq!(read(&r, "b.records"), "40");
    let msgs = ipfix_file_messages(&std::fs::read(&out).unwrap());
    let ix = decode_ipfix(&msgs);
    assert_eq!(ix.data.iter().filter(|d| d.0 < 260).count(), 80);
    let mut seq = 0;
    for &(s, n, _) in &ix.msgs {
        assert_eq!(s, seq);
        seq += n;
    }
    assert_eq!(read(&r, "a.sequence"), seq.to_string());
    assert_eq!(read(&r, "b.sequence"), seq.to_string());
}

/// Two replicas are two observation domains (DOMAIN and DOMAIN + 1), each
/// with its own templates and sequence numbers, their whole messages
/// interleaved in one file; together they export the one-core flows.
#[test]
fn replicas_export_as_one_domain_each() {
    let out = tmp("replicas.ipfix");
    let r = run(
        &lan_flowmon(&format!("FILENAME {}, DOMAIN 7", out.display())),
        RouterOptions {
            threads: 2,
            replicate: true,
            ..Default::default()
        },
    );
    assert_eq!(read(&r, "e.records"), "11978");
    let bytes = std::fs::read(&out).unwrap();
    let mut by_domain: HashMap<u32, Vec<Vec<u8>>> = HashMap::new();
    let mut b = &bytes[..];
    while !b.is_empty() {
        let n = usize::from(u16::from_be_bytes([b[2], b[3]]));
        let domain = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
        by_domain.entry(domain).or_default().push(b[..n].to_vec());
        b = &b[n..];
    }
    let mut domains: Vec<u32> = by_domain.keys().copied().collect();
    domains.sort_unstable();
    assert_eq!(domains, [7, 8]);
    let mut flows = 0;
    for msgs in by_domain.values() {
        // Templates come first in each domain (decode_ipfix needs them).
        let ix = decode_ipfix(msgs);
        let mut seq = 0;
        for &(s, n, _) in &ix.msgs {
            assert_eq!(s, seq);
            seq += n;
        }
        let n = ix.data.iter().filter(|d| d.0 < 260).count();
        assert!(n > 1000, "{n} flows in one domain");
        flows += n;
    }
    assert_eq!(flows, 11978);
}

/// Packets that are not flow records are counted and dropped: they do not
/// reach an exporter's output (they used to be passed on with the records).
#[test]
fn exporters_pass_on_records_only() {
    let garbage: &[&[u8]] = &[b"x", &[0u8; 176], b"not a flow record at all"];
    let f = records_pcap("pass-on.pcap", &[tcp4(), icmp4()], garbage);
    let sink = tmp("pass-on.csv");
    let v9 = tmp("pass-on-v9.csv");
    for (element, counter) in [
        (
            format!("IPFIXExport(FILENAME {})", tmp("pass-on.ipfix").display()),
            "ignored",
        ),
        (format!("FlowCSV({})", sink.display()), "bad"),
        (
            format!("FlowJSON({})", tmp("pass-on.json").display()),
            "bad",
        ),
        (
            format!("NetFlowV9Export(FILENAME {})", v9.display()),
            "ignored",
        ),
    ] {
        let r = run(
            &format!(
                "FromDump({}, STOP true) -> e :: {element} -> c :: Counter -> Discard;",
                f.display()
            ),
            RouterOptions::default(),
        );
        assert_eq!(read(&r, "c.count"), "2", "{element}");
        assert_eq!(read(&r, &format!("e.{counter}")), "3", "{element}");
    }
}
