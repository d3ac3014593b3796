//! Click's IP elements on literal packets: every drop reason, byte-exact
//! results, IPPrint's exact text, and CheckIPHeader on the shared real trace.

use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterOptions};
use std::path::{Path, PathBuf};

const LAN: &str = "../../../shared/traces/pathspider-real-lan2012.pcap";

fn build(text: &str) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let o = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "click_ip.click", &o).map_err(|d| d.to_string())?;
    Router::build(&c, &reg, RouterOptions::default()).map_err(|d| d.to_string())
}

fn run(text: &str) -> Router {
    let mut r = build(text).unwrap_or_else(|e| panic!("{e}"));
    r.run();
    r
}

fn read(r: &Router, h: &str) -> String {
    r.handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-click-ip-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Writes raw-IP packets to a pcap file; packet `i` has timestamp
/// `1353690000 + i` seconds and `i * 1000 + 17` microseconds.
fn pcap(name: &str, pkts: &[Vec<u8>]) -> PathBuf {
    let path = tmp(name);
    let mut w = PcapWriter::create(&path, LinkType::RAW_DLT12, 0, false).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        let ts = (1_353_690_000 + i as u64) * 1_000_000_000 + (i as u64 * 1000 + 17) * 1000;
        w.write(ts, p.len() as u32, p).unwrap();
    }
    w.flush().unwrap();
    path
}

fn records(p: &Path) -> Vec<Vec<u8>> {
    let mut r = PcapReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

// ---- packet builders (checksums computed independently of the elements) ----

fn csum(b: &[u8]) -> u16 {
    // Plain byte-pair loop, independent of linerate_wire's fast sum.
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

#[allow(clippy::too_many_arguments)]
fn ip_full(
    proto: u8,
    payload: &[u8],
    ttl: u8,
    ident: u16,
    off: u16,
    src: [u8; 4],
    dst: [u8; 4],
) -> Vec<u8> {
    let tl = (20 + payload.len()) as u16;
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&tl.to_be_bytes());
    h.extend_from_slice(&ident.to_be_bytes());
    h.extend_from_slice(&off.to_be_bytes());
    h.extend_from_slice(&[ttl, proto, 0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = csum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn ip(proto: u8, payload: &[u8]) -> Vec<u8> {
    ip_full(proto, payload, 64, 0x1234, 0x4000, A, B)
}

fn pseudo(proto: u8, len: usize) -> Vec<u8> {
    let mut v = A.to_vec();
    v.extend_from_slice(&B);
    v.extend_from_slice(&[0, proto]);
    v.extend_from_slice(&(len as u16).to_be_bytes());
    v
}

fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, win: u16, data: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[0x50, flags]);
    t.extend_from_slice(&win.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]);
    t.extend_from_slice(data);
    let mut all = pseudo(6, t.len());
    all.extend_from_slice(&t);
    let c = csum(&all);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

fn udp(sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(data);
    let mut all = pseudo(17, u.len());
    all.extend_from_slice(&u);
    let c = csum(&all);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

fn icmp(ty: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    let c = csum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn valid_ip_sum(h: &[u8]) -> bool {
    csum(&h[..usize::from(h[0] & 15) * 4]) == 0
}

// ---- CheckIPHeader ----

#[test]
fn check_ip_header_counts_every_drop_reason() {
    let good = ip(17, &udp(1, 2, b"x"));
    let mut bad_version = good.clone();
    bad_version[0] = 0x65;
    let mut bad_hlen = good.clone();
    bad_hlen[0] = 0x44;
    let mut bad_len = good.clone();
    bad_len[3] += 1; // total length beyond the packet
    let mut short_len = good.clone();
    short_len[2..4].copy_from_slice(&16u16.to_be_bytes()); // below the header
    let mut bad_sum = good.clone();
    bad_sum[11] ^= 1;
    let bad_src = ip_full(17, &udp(1, 2, b""), 64, 1, 0, [10, 0, 0, 9], B);
    let pkts = vec![
        good.clone(),
        good[..19].to_vec(),
        bad_version,
        bad_hlen,
        bad_len,
        short_len,
        bad_sum,
        bad_src,
        good.clone(),
    ];
    let f = pcap("reasons.pcap", &pkts);
    let out = tmp("reasons-bad.pcap");
    let r = run(&format!(
        "FromDump({}, STOP true) -> c :: CheckIPHeader(BADSRC 10.0.0.9, DETAILS true) -> ok :: Counter -> Discard;
         c[1] -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    assert_eq!(read(&r, "ok.count"), "2\n");
    assert_eq!(read(&r, "c.drops"), "7\n");
    assert_eq!(
        read(&r, "c.drop_details"),
        "1\ttiny packet\n1\tbad IP version\n1\tbad IP header length\n2\tbad IP length\n1\tbad IP checksum\n1\tbad source address\n"
    );
    // Bad packets leave on output 1 unchanged and in order.
    let bad = records(&out);
    assert_eq!(bad.len(), 7);
    assert_eq!(bad, pkts[1..8].to_vec());
}

/// `p` (an IPv4 packet with a 20-byte header) with 4 bytes of options
/// (NOP NOP NOP EOL), its lengths and header checksum fixed.
fn with_options(p: &[u8]) -> Vec<u8> {
    let mut q = p.to_vec();
    q.splice(20..20, [1, 1, 1, 0]);
    q[0] = 0x46;
    let tl = q.len() as u16;
    q[2..4].copy_from_slice(&tl.to_be_bytes());
    q[10] = 0;
    q[11] = 0;
    let c = csum(&q[..24]);
    q[10..12].copy_from_slice(&c.to_be_bytes());
    q
}

#[test]
fn check_ip_header_without_badsrc_checks_options_and_bad_packets_among_good_ones() {
    // Without BADSRC the common headers take a separate loop up to the
    // first packet that is bad or has options: mix both kinds in a batch.
    let good = ip(17, &udp(1, 2, b"x"));
    let opts = with_options(&good);
    let mut opts_bad_sum = opts.clone();
    opts_bad_sum[21] ^= 1;
    let mut opts_bad_len = opts.clone();
    opts_bad_len[2..4].copy_from_slice(&22u16.to_be_bytes());
    let mut bad_sum = good.clone();
    bad_sum[11] ^= 1;
    let pkts = vec![
        good.clone(),
        opts.clone(),
        good.clone(),
        opts_bad_sum,
        good.clone(),
        bad_sum,
        opts_bad_len,
        opts.clone(),
        good.clone(),
    ];
    let f = pcap("plain.pcap", &pkts);
    let out = tmp("plain-ok.pcap");
    let bad_out = tmp("plain-bad.pcap");
    let r = run(&format!(
        "FromDump({}, STOP true) -> c :: CheckIPHeader(DETAILS true) -> ToDump({}, ENCAP IP);
         c[1] -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display(),
        bad_out.display()
    ));
    assert_eq!(read(&r, "c.drops"), "3\n");
    assert_eq!(
        read(&r, "c.drop_details"),
        "0\ttiny packet\n0\tbad IP version\n0\tbad IP header length\n1\tbad IP length\n2\tbad IP checksum\n0\tbad source address\n"
    );
    assert_eq!(
        records(&out),
        vec![
            good.clone(),
            opts.clone(),
            good.clone(),
            good.clone(),
            opts,
            good.clone()
        ]
    );
    let bad: Vec<_> = pkts[3..7].iter().filter(|p| **p != good).cloned().collect();
    assert_eq!(records(&bad_out), bad);
}

#[test]
fn check_ip_header_without_output_1_drops_and_has_no_details_by_default() {
    let mut bad_sum = ip(6, &tcp(1, 2, 3, 4, 0x10, 5, b""));
    bad_sum[10] ^= 0x80;
    let f = pcap(
        "nodetails.pcap",
        &[bad_sum, ip(6, &tcp(1, 2, 3, 4, 0x10, 5, b""))],
    );
    let r = run(&format!(
        "FromDump({}, STOP true) -> c :: CheckIPHeader -> ok :: Counter -> Discard;",
        f.display()
    ));
    assert_eq!(read(&r, "ok.count"), "1\n");
    assert_eq!(read(&r, "c.drops"), "1\n");
    assert!(r.handle().call("c.drop_details", None).is_err());
}

#[test]
fn check_ip_header_checksum_false_and_checkipheader2_skip_the_checksum() {
    let mut bad_sum = ip(17, &udp(1, 2, b"abc"));
    bad_sum[11] ^= 0x40;
    let f = pcap("nosum.pcap", &[bad_sum]);
    let r = run(&format!(
        "FromDump({f}, STOP true) -> t :: Tee(3);
         t[0] -> a :: CheckIPHeader(CHECKSUM false) -> ca :: Counter -> Discard;
         t[1] -> b :: CheckIPHeader2 -> cb :: Counter -> Discard;
         t[2] -> c :: CheckIPHeader -> cc :: Counter -> Discard;",
        f = f.display()
    ));
    assert_eq!(read(&r, "ca.count"), "1\n");
    assert_eq!(read(&r, "cb.count"), "1\n");
    assert_eq!(read(&r, "cc.count"), "0\n");
}

#[test]
fn check_ip_header_interfaces_and_old_syntax() {
    // INTERFACES 10.0.0.2/24: broadcast 10.0.0.255 and 0.0.0.0 are bad
    // sources, unless sent to 10.0.0.2 (GOODDST).
    let from_bcast_to_other = ip_full(
        17,
        &udp(1, 2, b""),
        64,
        1,
        0,
        [10, 0, 0, 255],
        [10, 0, 0, 7],
    );
    let from_bcast_to_me = ip_full(17, &udp(1, 2, b""), 64, 1, 0, [10, 0, 0, 255], B);
    let from_zero = ip_full(17, &udp(1, 2, b""), 64, 1, 0, [0, 0, 0, 0], [10, 0, 0, 7]);
    let f = pcap(
        "ifs.pcap",
        &[from_bcast_to_other, from_bcast_to_me, from_zero.clone()],
    );
    let r = run(&format!(
        "FromDump({}, STOP true) -> c :: CheckIPHeader(INTERFACES 10.0.0.2/24) -> ok :: Counter -> Discard;",
        f.display()
    ));
    assert_eq!(read(&r, "ok.count"), "1\n");
    assert_eq!(read(&r, "c.drops"), "2\n");
    // Old syntax: CheckIPHeader(BADSRC2, OFFSET) also rejects 0.0.0.0.
    let f = pcap("old.pcap", &[from_zero, ip(17, &udp(1, 2, b""))]);
    let r = run(&format!(
        "FromDump({}, STOP true) -> c :: CheckIPHeader(10.0.0.99, 0) -> ok :: Counter -> Discard;",
        f.display()
    ));
    assert_eq!(read(&r, "ok.count"), "1\n");
    // Bad arguments are reported.
    let e = build("InfiniteSource -> CheckIPHeader(BADSRC nope) -> Discard;")
        .err()
        .unwrap();
    assert!(e.contains("BADSRC"), "{e}");
}

#[test]
fn check_ip_header_trims_padding_and_sets_dst_ip_and_headers() {
    let mut padded = ip(17, &udp(7, 9, b"hi"));
    let ip_len = padded.len();
    padded.extend_from_slice(&[0xee; 12]); // Ethernet padding
    let mut framed = vec![0u8; 14];
    framed.extend_from_slice(&padded);
    let f = pcap("pad.pcap", &[framed]);
    let out = tmp("pad-out.pcap");
    // StoreIPAddress(0) writes the DST_IP annotation over the first four
    // bytes; CheckUDPHeader needs the transport header annotation.
    let r = run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader(OFFSET 14) -> u :: CheckUDPHeader -> StoreIPAddress(0) -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    assert_eq!(read(&r, "u.drops"), "0\n");
    let got = records(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), 14 + ip_len);
    assert_eq!(&got[0][..4], &B);
    assert_eq!(&got[0][14..], &padded[..ip_len]);
}

#[test]
fn check_ip_header_on_the_real_trace_matches_an_independent_count() {
    let lan = Path::new(env!("CARGO_MANIFEST_DIR")).join(LAN);
    // Independent count: Ethernet frames of type IPv4 whose header is sane.
    let mut rd = PcapReader::open(&lan).unwrap();
    let mut want = 0u64;
    let mut total = 0u64;
    while let Some(rec) = rd.next_record() {
        let d = rec.unwrap().data;
        total += 1;
        if d.len() < 34 || d[12..14] != [0x08, 0x00] {
            continue;
        }
        let h = &d[14..];
        let hl = usize::from(h[0] & 15) * 4;
        let tl = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if h[0] >> 4 == 4 && hl >= 20 && tl >= hl && tl <= h.len() && valid_ip_sum(h) {
            want += 1;
        }
    }
    assert_eq!(total, 62_781);
    assert_eq!(want, 62_038);
    let r = run(&format!(
        "FromDump({}, STOP true) -> Strip(14) -> c :: CheckIPHeader(DETAILS true) -> ok :: Counter -> Discard;",
        lan.display()
    ));
    assert_eq!(read(&r, "ok.count"), format!("{want}\n"));
    assert_eq!(read(&r, "c.drops"), format!("{}\n", total - want));
    // The same through OFFSET instead of Strip.
    let r = run(&format!(
        "FromDump({}, STOP true) -> c :: CheckIPHeader(14) -> ok :: Counter -> Discard;",
        lan.display()
    ));
    assert_eq!(read(&r, "ok.count"), format!("{want}\n"));
}

// ---- MarkIPHeader, DecIPTTL, SetIPChecksum ----

#[test]
fn dec_ip_ttl_updates_the_checksum_and_sends_expired_packets_to_output_1() {
    let mut pkts = Vec::new();
    // Many TTLs and header words, so the incremental update is compared
    // with a full recomputation in every carry situation.
    for i in 0..200u32 {
        let ttl = (i % 254 + 2) as u8;
        let ident = (i.wrapping_mul(40503) & 0xffff) as u16;
        pkts.push(ip_full(
            6,
            &[0; 20],
            ttl,
            ident,
            (i * 7 % 3) as u16 * 0x2000,
            A,
            [10, (i >> 8) as u8, i as u8, 3],
        ));
    }
    pkts.push(ip_full(6, &[0; 20], 1, 1, 0, A, B));
    pkts.push(ip_full(6, &[0; 20], 0, 2, 0, A, B));
    let f = pcap("ttl.pcap", &pkts);
    let out = tmp("ttl-out.pcap");
    let expired = tmp("ttl-expired.pcap");
    let r = run(&format!(
        "FromDump({}, STOP true) -> MarkIPHeader -> d :: DecIPTTL -> ToDump({}, ENCAP IP); d[1] -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display(),
        expired.display()
    ));
    assert_eq!(read(&r, "d.drops"), "2\n");
    let got = records(&out);
    assert_eq!(got.len(), 200);
    for (g, p) in got.iter().zip(&pkts) {
        let mut want = p.clone();
        want[8] -= 1;
        want[10] = 0;
        want[11] = 0;
        let c = csum(&want[..20]);
        want[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(g, &want);
    }
    assert_eq!(records(&expired), pkts[200..].to_vec());
}

#[test]
fn dec_ip_ttl_multicast_false_and_active_false() {
    let mc = ip_full(17, &udp(1, 2, b""), 5, 1, 0, A, [224, 0, 0, 251]);
    let uni = ip_full(17, &udp(1, 2, b""), 5, 1, 0, A, B);
    let f = pcap("mc.pcap", &[mc.clone(), uni.clone()]);
    let out = tmp("mc-out.pcap");
    run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> DecIPTTL(MULTICAST false) -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    let got = records(&out);
    assert_eq!(got[0], mc);
    assert_eq!(got[1][8], 4);
    let out2 = tmp("inactive-out.pcap");
    let r = run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> d :: DecIPTTL(ACTIVE false) -> ToDump({}, ENCAP IP);",
        f.display(),
        out2.display()
    ));
    assert_eq!(records(&out2), vec![mc, uni]);
    assert_eq!(read(&r, "d.active"), "false\n");
}

#[test]
fn set_ip_checksum_repairs_headers_with_options() {
    let want = with_options(&ip(17, &udp(1, 2, b"data")));
    let mut p = want.clone();
    p[10] = 0xde;
    p[11] = 0xad;
    let short = vec![0x45, 0, 0, 20, 0, 0];
    let f = pcap("sum.pcap", &[p, short]);
    let out = tmp("sum-out.pcap");
    run(&format!(
        "FromDump({}, STOP true) -> MarkIPHeader -> SetIPChecksum -> c :: CheckIPHeader -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    assert_eq!(records(&out), vec![want]);
}

#[test]
fn mark_ip_header_sets_the_headers_for_later_elements() {
    let mut framed = vec![0xaa; 14];
    framed.extend_from_slice(&ip(6, &tcp(80, 1025, 100, 200, 0x18, 512, b"GET /")));
    let f = pcap("mark.pcap", &[framed]);
    let out = tmp("mark.txt");
    run(&format!(
        "FromDump({}, STOP true) -> MarkIPHeader(14) -> t :: CheckTCPHeader -> IPPrint(OUTFILE {}, TIMESTAMP false) -> Discard;",
        f.display(),
        out.display()
    ));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "10.0.0.1.80 > 10.0.0.2.1025: P 100:105(5,59,45) ack 200 win 512\n"
    );
}

// ---- IPPrint ----

#[test]
fn ip_print_matches_clicks_format() {
    let mut unreach_quote = ip(17, &udp(5353, 53, b"q"));
    unreach_quote.truncate(28);
    let pkts = vec![
        ip(6, &tcp(1234, 80, 5, 0, 0x02, 8192, b"")),
        ip(6, &tcp(80, 1234, 1000, 6, 0x12, 65535, b"")),
        ip(6, &tcp(80, 1234, 1001, 6, 0x11, 100, b"abc")),
        ip(6, &tcp(1, 2, 0xffff_fffe, 9, 0x04, 0, b"")),
        ip(17, &udp(53, 5353, b"hello")),
        ip(1, &icmp(8, 0, [0x01, 0x00, 0x00, 0x07], b"abcdefgh")),
        ip(1, &icmp(0, 0, [0x01, 0x00, 0x00, 0x07], b"")),
        ip(1, &icmp(3, 3, [0; 4], &unreach_quote)),
        ip(1, &icmp(3, 4, [0, 0, 0x05, 0xdc], &unreach_quote)),
        ip(1, &icmp(11, 0, [0; 4], &unreach_quote)),
        ip(1, &icmp(3, 1, [0; 4], &unreach_quote[..10])),
        ip(47, b"gre!"),
        ip_full(
            17,
            &udp(1, 2, b"0123456789abcdef")[..16],
            64,
            77,
            0x2000,
            A,
            B,
        ),
        ip_full(17, b"tail", 64, 77, 0x0002, A, B),
        ip(6, &tcp(1, 2, 3, 4, 0x10, 5, b"")[..10]),
    ];
    let f = pcap("print.pcap", &pkts);
    let out = tmp("print.txt");
    run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> IPPrint(ip, OUTFILE {}) -> Discard;",
        f.display(),
        out.display()
    ));
    let want = "\
ip: 1353690000.000017: 10.0.0.1.1234 > 10.0.0.2.80: S 5:6(1,40,40) win 8192
ip: 1353690001.001017: 10.0.0.1.80 > 10.0.0.2.1234: S 1000:1001(1,40,40) ack 6 win 65535
ip: 1353690002.002017: 10.0.0.1.80 > 10.0.0.2.1234: F 1001:1005(4,43,43) ack 6 win 100
ip: 1353690003.003017: 10.0.0.1.1 > 10.0.0.2.2: R 4294967294:4294967294(0,40,40) win 0
ip: 1353690004.004017: 10.0.0.1.53 > 10.0.0.2.5353: udp 13
ip: 1353690005.005017: 10.0.0.1 > 10.0.0.2: icmp echo (256, 7)
ip: 1353690006.006017: 10.0.0.1 > 10.0.0.2: icmp echo-reply (256, 7)
ip: 1353690007.007017: 10.0.0.1 > 10.0.0.2: icmp 10.0.0.2 unreachable port udp/53
ip: 1353690008.008017: 10.0.0.1 > 10.0.0.2: icmp 10.0.0.2 unreachable needfrag (mtu 1500)
ip: 1353690009.009017: 10.0.0.1 > 10.0.0.2: icmp timeexceeded transit
ip: 1353690010.010017: 10.0.0.1 > 10.0.0.2: icmp unreachable host truncated-icmp
ip: 1353690011.011017: 10.0.0.1 > 10.0.0.2: ip-proto-47
ip: 1353690012.012017: 10.0.0.1.1 > 10.0.0.2.2: udp 24 (frag 77:16@0+)
ip: 1353690013.013017: 10.0.0.1 > 10.0.0.2: udp (frag 77:4@16)
ip: 1353690014.014017: 10.0.0.1.1 > 10.0.0.2.2: truncated-tcp
";
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want);
}

#[test]
fn ip_print_options_contents_and_payload() {
    let p = ip(
        17,
        &udp(
            53,
            5353,
            b"hello, world! this is a UDP payload that spans lines",
        ),
    );
    let f = pcap("opts.pcap", &[p]);
    let (o1, o2, o3) = (tmp("opts1.txt"), tmp("opts2.txt"), tmp("opts3.txt"));
    run(&format!(
        "FromDump({f}, STOP true) -> CheckIPHeader -> SetIPAddress(1.2.3.4)
           -> IPPrint(OUTFILE {o1}, TIMESTAMP false, ID true, TTL true, TOS true, LENGTH true, PAINT true, CONTENTS hex, MAXLENGTH 30)
           -> IPPrint(OUTFILE {o2}, TIMESTAMP false, AGGREGATE true, PAINT true, PAYLOAD ascii)
           -> IPPrint(OUTFILE {o3}, TIMESTAMP false, CONTENTS ascii, MAXLENGTH -1) -> Discard;",
        f = f.display(),
        o1 = o1.display(),
        o2 = o2.display(),
        o3 = o3.display()
    ));
    assert_eq!(
        std::fs::read_to_string(&o1).unwrap(),
        "paint 0: id 4660 ttl 64 tos 0 length 80 10.0.0.1.53 > 10.0.0.2.5353: udp 60\n  \
         45000050 12344000 40111467 0a000001 0a000002 003514e9\n  \
         003c7b3c 6865\n"
    );
    assert_eq!(
        std::fs::read_to_string(&o2).unwrap(),
        "#0.0: 10.0.0.1.53 > 10.0.0.2.5353: udp 60\n  hello, w orld! th is is a  UDP payl oad that  spans l\n  ines\n"
    );
    let o3s = std::fs::read_to_string(&o3).unwrap();
    assert_eq!(
        o3s,
        "10.0.0.1.53 > 10.0.0.2.5353: udp 60\n  E..P.4@. @..g.... .....5.. .<{<hell o, world ! this i\n  s a UDP  payload  that spa ns lines\n"
    );
}

#[test]
fn ip_print_rejects_bad_contents() {
    let e = build("InfiniteSource -> IPPrint(CONTENTS bogus) -> Discard;")
        .err()
        .unwrap();
    assert!(e.contains("bad contents value 'BOGUS'"), "{e}");
    let e = build("InfiniteSource -> IPPrint(CONTENTS hex, PAYLOAD hex) -> Discard;")
        .err()
        .unwrap();
    assert!(
        e.contains("specify at most one of PAYLOAD and CONTENTS"),
        "{e}"
    );
}

// ---- TCP, UDP, ICMP checks and checksums ----

#[test]
fn check_tcp_udp_icmp_headers_count_their_drop_reasons() {
    let good_tcp = ip(6, &tcp(1, 2, 3, 4, 0x10, 5, b"data"));
    let mut bad_tcp_sum = good_tcp.clone();
    bad_tcp_sum[30] ^= 1;
    let mut bad_tcp_off = good_tcp.clone();
    bad_tcp_off[32] = 0x40; // data offset 4 words
    bad_tcp_off[30] ^= 0; // checksum irrelevant
    let good_udp = ip(17, &udp(1, 2, b"data"));
    let mut bad_udp_sum = good_udp.clone();
    bad_udp_sum[27] ^= 1;
    let mut no_udp_sum = good_udp.clone();
    no_udp_sum[26] = 0;
    no_udp_sum[27] = 0;
    let mut bad_udp_len = good_udp.clone();
    bad_udp_len[25] = 40;
    let good_icmp = ip(1, &icmp(8, 0, [0, 1, 0, 2], b"ping"));
    let mut bad_icmp_sum = good_icmp.clone();
    bad_icmp_sum[22] ^= 1;
    let short_unreach = ip(1, &icmp(3, 1, [0; 4], &[0; 20]));
    let pkts = vec![
        good_tcp,
        bad_tcp_sum,
        bad_tcp_off,
        good_udp,
        bad_udp_sum,
        no_udp_sum,
        bad_udp_len,
        good_icmp,
        bad_icmp_sum,
        short_unreach,
    ];
    let f = pcap("l4.pcap", &pkts);
    let r = run(&format!(
        "FromDump({f}, STOP true) -> CheckIPHeader -> tee :: Tee(3);
         tee[0] -> t :: CheckTCPHeader(DETAILS true) -> tc :: Counter -> Discard; t[1] -> Discard;
         tee[1] -> u :: CheckUDPHeader(DETAILS true) -> uc :: Counter -> Discard; u[1] -> Discard;
         tee[2] -> i :: CheckICMPHeader(DETAILS true) -> ic :: Counter -> Discard; i[1] -> Discard;",
        f = f.display()
    ));
    assert_eq!(read(&r, "tc.count"), "1\n");
    assert_eq!(
        read(&r, "t.drop_details"),
        "7\tnot TCP\n1\tbad packet length\n1\tbad TCP checksum\n"
    );
    assert_eq!(read(&r, "uc.count"), "2\n");
    assert_eq!(
        read(&r, "u.drop_details"),
        "6\tnot UDP\n1\tbad packet length\n1\tbad UDP checksum\n"
    );
    assert_eq!(read(&r, "ic.count"), "1\n");
    assert_eq!(
        read(&r, "i.drop_details"),
        "7\tnot ICMP\n1\tbad packet length\n1\tbad ICMP checksum\n"
    );
    assert_eq!(read(&r, "i.drops"), "9\n");
}

#[test]
fn set_tcp_and_udp_checksums_are_byte_exact() {
    let t = ip(
        6,
        &tcp(1234, 80, 77, 88, 0x18, 4096, b"some odd-length data"),
    );
    let u = ip(17, &udp(9, 10, b"odd"));
    let mut t0 = t.clone();
    t0[36] = 0xff;
    t0[37] = 0xff;
    let mut u0 = u.clone();
    u0[26] = 0x12;
    u0[27] = 0x34;
    let frag = ip_full(17, &udp(1, 2, b"abcd"), 64, 9, 0x2000, A, B);
    let f = pcap("setsum-in.pcap", &[t0.clone(), u0, frag.clone()]);
    let (o, o1, o2) = (
        tmp("setsum-u.pcap"),
        tmp("setsum-u1.pcap"),
        tmp("setsum-t.pcap"),
    );
    // SetUDPChecksum does not look at the protocol: the TCP packet's "UDP
    // length" (its sequence number's top half) is 0, so it goes to output
    // 1 with the fragment, unchanged.
    run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> s :: SetUDPChecksum -> ToDump({}, ENCAP IP);
         s[1] -> ToDump({}, ENCAP IP);",
        f.display(),
        o.display(),
        o1.display()
    ));
    assert_eq!(records(&o), vec![u]);
    assert_eq!(records(&o1), vec![t0.clone(), frag]);
    let f2 = pcap("settcp-in.pcap", &[t0]);
    run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> SetTCPChecksum -> c :: CheckTCPHeader -> ToDump({}, ENCAP IP);",
        f2.display(),
        o2.display()
    ));
    assert_eq!(records(&o2), vec![t]);
}

// ---- SetIPDSCP, SetIPAddress, StoreIPAddress ----

#[test]
fn set_ip_dscp_and_store_ip_address_keep_checksums_valid() {
    let t = ip(6, &tcp(1234, 80, 77, 88, 0x18, 4096, b"payload"));
    let u = ip(17, &udp(9, 10, b"odd"));
    let f = pcap("dscp.pcap", &[t, u]);
    let out = tmp("dscp-out.pcap");
    let r = run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> d :: SetIPDSCP(46) -> StoreIPAddress(192.168.7.9, src)
           -> SetIPAddress(172.16.0.1) -> StoreIPAddress(dst) -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    assert_eq!(read(&r, "d.value"), "46\n");
    let got = records(&out);
    assert_eq!(got.len(), 2);
    for g in &got {
        assert_eq!(g[1], 46 << 2);
        assert_eq!(&g[12..16], &[192, 168, 7, 9]);
        assert_eq!(&g[16..20], &[172, 16, 0, 1]);
        assert!(valid_ip_sum(g));
        // Transport checksum over the new pseudo-header.
        let mut all = g[12..20].to_vec();
        all.extend_from_slice(&[0, g[9]]);
        all.extend_from_slice(&((g.len() - 20) as u16).to_be_bytes());
        all.extend_from_slice(&g[20..]);
        assert_eq!(csum(&all), 0, "transport checksum of {g:02x?}");
    }
    assert!(build("InfiniteSource -> SetIPDSCP(64) -> Discard;").is_err());
}

#[test]
fn store_ip_address_at_an_offset_skips_a_zero_annotation() {
    let p = ip(17, &udp(1, 2, b"abcdefgh"));
    let f = pcap("store.pcap", std::slice::from_ref(&p));
    let out = tmp("store-out.pcap");
    run(&format!(
        "FromDump({}, STOP true) -> StoreIPAddress(28) -> StoreIPAddress(9.8.7.6, 32) -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    let mut want = p;
    want[32..36].copy_from_slice(&[9, 8, 7, 6]);
    assert_eq!(records(&out), vec![want]);
}

// ---- ICMPError, IPFragmenter, IPReassembler ----

#[test]
fn icmp_error_builds_time_exceeded_messages() {
    let expired = ip_full(17, &udp(1, 2, b"0123456789"), 1, 0x4242, 0, A, B);
    let to_bcast = ip_full(17, &udp(1, 2, b""), 1, 1, 0, A, [255, 255, 255, 255]);
    let from_zero = ip_full(17, &udp(1, 2, b""), 1, 1, 0, [0, 1, 2, 3], B);
    let icmp_err = ip_full(1, &icmp(3, 1, [0; 4], &[0; 28]), 1, 1, 0, A, B);
    let later_frag = ip_full(17, b"tail", 1, 1, 0x0004, A, B);
    let f = pcap(
        "icmperr.pcap",
        &[expired.clone(), to_bcast, from_zero, icmp_err, later_frag],
    );
    let (out, txt) = (tmp("icmperr-out.pcap"), tmp("icmperr.txt"));
    let r = run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> dt :: DecIPTTL -> Discard;
         dt[1] -> e :: ICMPError(10.0.0.254, timeexceeded) -> IPPrint(OUTFILE {}, TIMESTAMP false) -> ToDump({}, ENCAP IP);",
        f.display(),
        txt.display(),
        out.display()
    ));
    assert_eq!(read(&r, "dt.drops"), "5\n");
    assert_eq!(read(&r, "e.mtu"), "576\n");
    let got = records(&out);
    assert_eq!(got.len(), 1, "only the first packet deserves an error");
    let g = &got[0];
    assert_eq!(g.len(), 20 + 8 + expired.len());
    assert_eq!(g[0], 0x45);
    assert_eq!(usize::from(u16::from_be_bytes([g[2], g[3]])), g.len());
    assert_eq!((g[8], g[9]), (200, 1));
    assert_eq!(&g[12..16], &[10, 0, 0, 254]);
    assert_eq!(&g[16..20], &A);
    assert!(valid_ip_sum(g));
    assert_eq!((g[20], g[21]), (11, 0));
    assert_eq!(csum(&g[20..]), 0);
    assert_eq!(&g[28..], &expired[..]);
    assert_eq!(
        std::fs::read_to_string(&txt).unwrap(),
        "10.0.0.254 > 10.0.0.1: icmp timeexceeded transit\n"
    );
    assert!(build("InfiniteSource -> ICMPError(1.2.3.4, echo) -> Discard;").is_err());
    assert!(
        build("InfiniteSource -> ICMPError(1.2.3.4, unreachable, nonsense) -> Discard;").is_err()
    );
    assert!(build(
        "InfiniteSource -> ICMPError(1.2.3.4, unreachable, needfrag, PMTU 1500) -> Discard;"
    )
    .is_ok());
}

#[test]
fn ip_fragmenter_and_reassembler_round_trip() {
    let data: Vec<u8> = (0..1400u32).map(|i| (i * 7 + 3) as u8).collect();
    let big = ip_full(17, &udp(1000, 2000, &data), 64, 0xbeef, 0, A, B);
    let df = ip_full(17, &udp(1000, 2000, &data), 64, 0xbeee, 0x4000, A, B);
    let small = ip(17, &udp(1, 2, b"small"));
    let f = pcap("frag.pcap", &[big.clone(), df.clone(), small.clone()]);
    let (frags, dfout, whole) = (tmp("frags.pcap"), tmp("df.pcap"), tmp("whole.pcap"));
    let r = run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> fr :: IPFragmenter(576) -> t :: Tee;
         t[0] -> ToDump({}, ENCAP IP);
         t[1] -> CheckIPHeader -> IPReassembler -> ToDump({}, ENCAP IP);
         fr[1] -> ToDump({}, ENCAP IP);",
        f.display(),
        frags.display(),
        whole.display(),
        dfout.display()
    ));
    assert_eq!(read(&r, "fr.drops"), "1\n");
    assert_eq!(read(&r, "fr.fragments"), "3\n");
    let fs = records(&frags);
    assert_eq!(fs.len(), 4);
    // 1408-byte payload: 552 + 552 + 304, then the small packet unchanged.
    let want = [(572, 0x2000u16), (572, 0x2000 + 69), (324, 138)];
    for (g, (len, off)) in fs.iter().zip(want) {
        assert_eq!(g.len(), len);
        assert_eq!(u16::from_be_bytes([g[2], g[3]]) as usize, len);
        assert_eq!(u16::from_be_bytes([g[6], g[7]]), off);
        assert_eq!(&g[4..6], &[0xbe, 0xef]);
        assert!(valid_ip_sum(g));
    }
    assert_eq!(fs[3], small);
    assert_eq!(records(&dfout), vec![df]);
    assert_eq!(records(&whole), vec![big, small]);
}

#[test]
fn ip_reassembler_handles_reordering_duplicates_and_bad_fragments() {
    let data: Vec<u8> = (0..100u32).map(|i| i as u8).collect();
    let whole = ip_full(17, &udp(5, 6, &data), 64, 7, 0, A, B);
    let payload = &whole[20..];
    let frag = |off: usize, end: usize, mf: bool| {
        let o = (off / 8) as u16 | if mf { 0x2000 } else { 0 };
        ip_full(17, &payload[off..end], 64, 7, o, A, B)
    };
    let bad_middle = ip_full(17, &payload[8..13], 64, 7, 0x2001, A, B); // MF, length not /8
    let other = ip_full(17, &payload[0..16], 64, 8, 0x2000, A, B); // never completed
    let pkts = vec![
        frag(64, 108, false),
        bad_middle,
        frag(16, 64, true),
        other,
        frag(16, 40, true),
        frag(0, 24, true),
    ];
    let f = pcap("reasm.pcap", &pkts);
    let out = tmp("reasm-out.pcap");
    run(&format!(
        "FromDump({}, STOP true) -> CheckIPHeader -> IPReassembler -> ToDump({}, ENCAP IP);",
        f.display(),
        out.display()
    ));
    assert_eq!(records(&out), vec![whole]);
}
