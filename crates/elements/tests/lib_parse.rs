//! The parsing and rewriting elements of the accelerated library
//! (`L4Parser`, `IPChecksum`, `Extractor`): literal frames with exact annotations and handler values,
//! the router's port routing, and differential tests of `IMPL fast`
//! against `IMPL reference` on random frames.

mod common;

use common::run;
use linerate_elements::parse::extractor::Extractor;
use linerate_elements::parse::ipchecksum::IPChecksum;
use linerate_elements::parse::l4parser::L4Parser;
use linerate_runtime::anno::{offsets, Anno, NO_HEADER};
use linerate_runtime::flow::{map_v4, FlowKey};
use linerate_runtime::{Batch, ConfigureCtx, Element, Packet, Processing, RouterOptions};
use proptest::prelude::*;

const PUSH2: [Processing; 2] = [Processing::Push, Processing::Push];

/// A configuration context for `args` with `nout` push outputs.
fn ctx<'a>(args: &[&str], nout: usize) -> ConfigureCtx<'a> {
    ConfigureCtx {
        name: "e",
        config: "",
        args: args.iter().map(|s| s.to_string()).collect(),
        inputs: &PUSH2[..1],
        outputs: &PUSH2[..nout],
        replica: (0, 1),
        default_burst: 64,
    }
}

fn parser(args: &[&str]) -> L4Parser {
    L4Parser::configure(&ctx(args, 2)).unwrap_or_else(|e| panic!("{e:?}"))
}

fn batch(frames: &[Vec<u8>]) -> Batch {
    frames.iter().map(|f| Packet::from_slice(f)).collect()
}

fn read(e: &dyn Element, h: &str) -> String {
    e.read_handler(h)
        .unwrap_or_else(|| panic!("no handler {h}"))
}

// ---- literal frames ----

fn hexb(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Ethernet + IPv4/UDP 10.0.0.1:1234 -> 10.0.0.2:80, 4 bytes of payload.
const V4_UDP: &str = "020000000002 020000000001 0800
    45000020 00010000 4011 0000 0a000001 0a000002
    04d20050 000c0000 61626364";

/// Ethernet + 802.1ad 0x88a8 TCI 0x2064 + 802.1Q TCI 0x0007 + IPv6 with a
/// Hop-by-Hop header (8 bytes) and TCP 2001:db8::1:443 -> 2001:db8::2:8080.
const QINQ_V6_TCP: &str = "020000000002 020000000001 88a8 2064 8100 0007 86dd
    60000000 001c 00 40
    20010db8000000000000000000000001
    20010db8000000000000000000000002
    06000104 00000000
    01bb1f90 00000001 00000000 50020000 00000000";

/// Ethernet + IPv4 ICMP echo request id 0x1234 from 1.1.1.1 to 2.2.2.2.
const V4_ICMP: &str = "020000000002 020000000001 0800
    4500001c 00000000 4001 0000 01010101 02020202
    0800f7ff 12340000";

#[test]
fn literal_frames_get_the_contract_annotations() {
    let mut e = parser(&[]);
    let frames = [hexb(V4_UDP), hexb(QINQ_V6_TCP), hexb(V4_ICMP)];
    let (good, bad) = e.process(batch(&frames));
    assert!(bad.is_none());
    let p: Vec<&Packet> = good.iter().collect();
    // IPv4/UDP.
    assert_eq!(p[0].network_header_offset(), Some(14));
    assert_eq!(p[0].transport_header_offset(), Some(34));
    assert_eq!(p[0].anno().u8(offsets::L4_PROTO), 17);
    assert_eq!(p[0].anno().u16(offsets::VLAN_TCI), 0);
    let k = FlowKey::from_packet(p[0]).unwrap();
    assert_eq!(k.src, map_v4([10, 0, 0, 1]));
    assert_eq!((k.sport, k.dport, k.proto, k.version), (1234, 80, 17, 4));
    let a = linerate_wire::l4::addr_word_v4([10, 0, 0, 1], [10, 0, 0, 2]);
    let want = linerate_wire::l4::flow_hash(a, 1234, 80, 17, 4);
    assert_eq!(p[0].anno().flow_hash, want);
    // QinQ IPv6 with Hop-by-Hop, TCP.
    assert_eq!(p[1].network_header_offset(), Some(22));
    assert_eq!(p[1].transport_header_offset(), Some(22 + 40 + 8));
    assert_eq!(p[1].anno().u8(offsets::L4_PROTO), 6);
    assert_eq!(p[1].anno().u16(offsets::VLAN_TCI), 0x2064);
    let k = FlowKey::from_packet(p[1]).unwrap();
    assert_eq!((k.sport, k.dport, k.proto, k.version), (443, 8080, 6, 6));
    assert_eq!(k.dst[15], 2);
    // ICMP echo: identifier and type/code are the ports.
    let k = FlowKey::from_packet(p[2]).unwrap();
    assert_eq!((k.sport, k.dport, k.proto), (0x1234, 0x0800, 1));
    for q in &p {
        assert_ne!(q.anno().flow_hash, 0);
    }
    assert_eq!(read(&e, "count"), "3");
    assert_eq!(read(&e, "drops"), "0");
}

/// `frame` in a buffer of its own, after `headroom` bytes.
fn with_headroom(frame: &[u8], headroom: usize) -> Packet {
    let mut p = Packet::new(headroom + frame.len());
    let h0 = p.headroom();
    p.pull(headroom - h0);
    p.take(h0);
    p.data_mut().copy_from_slice(frame);
    assert_eq!(p.headroom(), headroom);
    p
}

#[test]
fn offsets_beyond_the_annotation_range_are_no_header() {
    // Header offsets count from the buffer head: with the frame ending at
    // or beyond NO_HEADER the fast parser leaves the packet to its second
    // pass, which stores NO_HEADER for an offset that does not fit, as the
    // reference does; just below, the first pass stores them all.
    let v4 = hexb(V4_UDP);
    // One 802.1Q tag, IPv6 and TCP (the literal frame without its outer
    // tag and its Hop-by-Hop header).
    let mut v6 = hexb(QINQ_V6_TCP);
    v6.drain(58..66);
    v6.drain(12..16);
    v6[18 + 4..18 + 6].copy_from_slice(&20u16.to_be_bytes());
    v6[18 + 6] = 6;
    let top = usize::from(NO_HEADER);
    let packets = || -> Batch {
        let mut b = Batch::new();
        for (f, nh, th) in [(&v4, 14, 34), (&v6, 18, 58)] {
            // The frame ends just below NO_HEADER, at it; the transport
            // header starts just below it, just past it; the network
            // header just past it.
            for hr in [
                top - 1 - f.len(),
                top - f.len(),
                top - 1 - th,
                top + 1 - th,
                top + 1 - nh,
            ] {
                b.push(with_headroom(f, hr));
            }
        }
        b
    };
    let (fast, fb) = parser(&[]).process(packets());
    let (reference, rb) = parser(&["IMPL reference"]).process(packets());
    assert!(fb.is_none() && rb.is_none());
    let f: Vec<&Packet> = fast.iter().collect();
    let at = |i: usize| {
        let a = f[i].anno();
        let hr = f[i].headroom();
        let off = |h: u16| (h != NO_HEADER).then(|| usize::from(h) - hr);
        (off(a.network_header), off(a.transport_header))
    };
    for (i, (x, y)) in f.iter().zip(reference.iter()).enumerate() {
        // The hash is the frame's 5-tuple's, also where an offset does not
        // fit (the reference hashes the key read back through them).
        let want = linerate_wire::l4::parse(x.data()).unwrap();
        assert_eq!(x.anno().flow_hash, want.hash, "packet {i}");
        if at(i).1.is_some() {
            assert_eq!(x.anno(), y.anno(), "packet {i}");
        }
    }
    assert_eq!(at(0), (Some(14), Some(34)));
    assert_eq!(at(1), (Some(14), Some(34)));
    assert_eq!(at(2), (Some(14), Some(34)));
    assert_eq!(at(3), (Some(14), None));
    assert_eq!(at(4), (None, None));
    assert_eq!(at(5), (Some(18), Some(58)));
    assert_eq!(at(6), (Some(18), Some(58)));
    assert_eq!(at(7), (Some(18), Some(58)));
    assert_eq!(at(8), (Some(18), None));
    assert_eq!(at(9), (None, None));
    for p in &f {
        let proto = if p.len() == v4.len() { 17 } else { 6 };
        let tci = if p.len() == v4.len() { 0 } else { 7 };
        assert_eq!(p.anno().u8(offsets::L4_PROTO), proto);
        assert_eq!(p.anno().u16(offsets::VLAN_TCI), tci);
    }
    assert_ne!(f[4].anno().flow_hash, 0);
}

#[test]
fn every_drop_reason_is_counted() {
    let good = hexb(V4_UDP);
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut v5 = good.clone();
    v5[14] = 0x55;
    let mut ihl = good.clone();
    ihl[14] = 0x43;
    let mut long = good.clone();
    long[17] = 0x40;
    let mut v6 = hexb(QINQ_V6_TCP);
    v6[22 + 4..22 + 6].copy_from_slice(&[0x00, 0x04]); // payload shorter than the hop-by-hop header
    let frames = [good[..20].to_vec(), arp, v5, ihl, long, v6, good.clone()];
    let mut e = parser(&[]);
    let (ok, bad) = e.process(batch(&frames));
    assert_eq!(ok.len(), 1);
    assert_eq!(bad.unwrap().len(), 6);
    for h in [
        "truncated",
        "not_ip",
        "bad_version",
        "bad_header_length",
        "bad_length",
        "bad_extension",
    ] {
        assert_eq!(read(&e, h), "1", "{h}");
    }
    assert_eq!(read(&e, "drops"), "6");
    assert_eq!(read(&e, "count"), "1");
    // Output 1 is connected: the summary lists them as sent there, not
    // as drops; without it, as drops.
    assert!(e.drops().is_empty());
    let names: Vec<_> = e.diverted().iter().map(|d| (d.0, d.2)).collect();
    assert_eq!(names, [(1, 1); 6]);
    let mut e = L4Parser::configure(&ctx(&[], 1)).unwrap();
    e.process(batch(&frames));
    assert!(e.diverted().is_empty());
    let names: Vec<_> = e.drops().iter().map(|d| d.1).collect();
    assert_eq!(names, [1; 6]);
}

#[test]
fn impl_keyword_is_checked() {
    assert!(L4Parser::configure(&ctx(&["IMPL reference"], 1)).is_ok());
    let e = L4Parser::configure(&ctx(&["IMPL quick"], 1)).err().unwrap();
    assert!(e[0].contains("IMPL"), "{e:?}");
}

#[test]
fn router_sends_unparseable_packets_to_output_1() {
    let good = hexb(V4_UDP);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let conf = format!(
        "InfiniteSource(DATA \\<{}>, LIMIT 5, STOP true) -> p :: L4Parser -> a :: Counter -> Discard;
         InfiniteSource(DATA \\<{}>, LIMIT 3) -> p;
         p[1] -> b :: Counter -> Discard;
         InfiniteSource(DATA \\<{}>, LIMIT 2) -> q :: L4Parser(IMPL reference) -> c :: Counter -> Discard;",
        hex(&good),
        hex(&good[..30]),
        hex(&good[..30]),
    );
    let r = run(&conf, RouterOptions::default());
    let h = |n: &str| r.handle().call(n, None).unwrap().trim().to_string();
    assert_eq!(h("a.count"), "5");
    assert_eq!(h("b.count"), "3");
    assert_eq!(h("p.truncated"), "3");
    assert_eq!(h("p.count"), "5");
    assert_eq!(h("q.drops"), "2");
    assert_eq!(h("c.count"), "0");
}

// ---- random frames for the differential tests ----

/// A small deterministic generator, so one proptest seed gives a batch.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// A frame that is usually well formed (VLAN tags, IPv4 with options and
/// fragments, IPv6 with extension chains, the five transport protocols and
/// others), then sometimes damaged: a byte changed or the frame cut.
fn random_frame(r: &mut Rng) -> Vec<u8> {
    let mut f: Vec<u8> = (0..12).map(|_| r.byte()).collect();
    for _ in 0..r.pick(&[0, 0, 0, 1, 1, 2, 3]) {
        f.extend_from_slice(&r.pick(&[[0x81u8, 0x00], [0x88, 0xa8]]));
        f.extend_from_slice(&[r.byte(), r.byte()]);
    }
    let protos = [6u8, 17, 1, 58, 132, 47, 50, 0, 255];
    let payload = |r: &mut Rng| -> Vec<u8> {
        let n = r.pick(&[0usize, 3, 8, 12, 20, 40]);
        (0..n).map(|_| r.byte()).collect()
    };
    match r.below(10) {
        0..=4 => {
            f.extend_from_slice(&[0x08, 0x00]);
            let opts = r.pick(&[0usize, 0, 4, 12, 40]);
            let hl = 20 + opts;
            let body = payload(r);
            let total = hl + body.len();
            let mut h = vec![0u8; hl];
            h[0] = 0x40 | (hl / 4) as u8;
            h[1] = r.byte();
            h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            let frag: u16 = r.pick(&[0, 0, 0x2000, 0x2001, 0x0010, 0x4000]);
            h[6..8].copy_from_slice(&frag.to_be_bytes());
            h[8] = 64;
            h[9] = r.pick(&protos);
            for b in &mut h[12..] {
                *b = r.byte();
            }
            f.extend_from_slice(&h);
            f.extend_from_slice(&body);
        }
        5..=8 => {
            f.extend_from_slice(&[0x86, 0xdd]);
            let mut chain = Vec::new();
            let first = r.pick(&[0u8, 0, 43, 44, 51, 60, 6, 17, 58, 50, 59]);
            let mut nh = first;
            for _ in 0..r.pick(&[0usize, 1, 2, 4, 9]) {
                if !matches!(nh, 0 | 43 | 44 | 51 | 60) {
                    break;
                }
                let next = r.pick(&[43u8, 44, 51, 60, 0, 6, 17, 1, 58, 132, 50, 59]);
                let len = match nh {
                    44 => 8,
                    51 => 8 + 4 * r.below(3) as usize,
                    _ => 8 + 8 * r.below(2) as usize,
                };
                let mut e = vec![0u8; len];
                e[0] = next;
                e[1] = match nh {
                    44 => r.byte(),
                    51 => (len / 4 - 2) as u8,
                    _ => (len / 8 - 1) as u8,
                };
                if nh == 44 {
                    let off: u16 = r.pick(&[0, 0, 1, 8, 0x10]);
                    e[2..4].copy_from_slice(&off.to_be_bytes());
                }
                chain.extend_from_slice(&e);
                nh = next;
            }
            let body = payload(r);
            let plen = chain.len() + body.len();
            let mut h = vec![0u8; 40];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
            h[6] = first;
            h[7] = 64;
            for b in &mut h[8..] {
                *b = r.byte();
            }
            f.extend_from_slice(&h);
            f.extend_from_slice(&chain);
            f.extend_from_slice(&body);
        }
        _ => {
            f.extend_from_slice(&[r.byte(), r.byte()]);
            f.extend_from_slice(&payload(r));
        }
    }
    if r.below(3) == 0 {
        f.resize(f.len() + r.below(8) as usize, 0);
    }
    match r.below(6) {
        0 if !f.is_empty() => {
            let i = r.below(f.len() as u64) as usize;
            f[i] = r.byte();
        }
        1 => f.truncate(r.below(f.len() as u64 + 1) as usize),
        _ => {}
    }
    f
}

/// Packets with `frames` as data and identical arbitrary annotations.
fn annotated(frames: &[Vec<u8>], r: &mut Rng) -> Batch {
    frames
        .iter()
        .map(|f| {
            let mut p = Packet::from_slice(f);
            let a = p.anno_mut();
            a.flow_hash = r.next() as u32;
            for b in a.user.iter_mut() {
                *b = r.byte();
            }
            // The capture's cut: none, a few bytes, or anything.
            let extra = match r.below(3) {
                0 => 0,
                1 => r.below(64) as u32,
                _ => r.next() as u32,
            };
            a.set_u32(offsets::EXTRA_LENGTH, extra);
            if r.below(2) == 0 {
                p.set_transport_header(3);
            }
            p
        })
        .collect()
}

fn snapshot(b: &Option<Batch>) -> Vec<(Vec<u8>, Anno)> {
    b.iter()
        .flat_map(|b| b.iter())
        .map(|p| (p.data().to_vec(), *p.anno()))
        .collect()
}

/// Compares two snapshots, reporting only the first differing packet.
fn same(a: Vec<(Vec<u8>, Anno)>, b: Vec<(Vec<u8>, Anno)>) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        prop_assert_eq!(x, y, "packet {}", i);
    }
    Ok(())
}

const L4_HANDLERS: [&str; 9] = [
    "count",
    "cut",
    "drops",
    "truncated",
    "not_ip",
    "bad_version",
    "bad_header_length",
    "bad_length",
    "bad_extension",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn l4parser_fast_matches_reference(seed in 1u64.., batches in 1usize..4, n in 1usize..80) {
        let mut fast = parser(&[]);
        let mut reference = parser(&["IMPL reference"]);
        let mut r = Rng(seed);
        for _ in 0..batches {
            let frames: Vec<Vec<u8>> = (0..n).map(|_| random_frame(&mut r)).collect();
            let s = r.next();
            let (fg, fb) = fast.process(annotated(&frames, &mut Rng(s)));
            let (rg, rb) = reference.process(annotated(&frames, &mut Rng(s)));
            let fg = Some(fg);
            same(snapshot(&fg), snapshot(&Some(rg)))?;
            same(snapshot(&fb), snapshot(&rb))?;
            for p in fg.iter().flat_map(|b| b.iter()) {
                prop_assert!(FlowKey::from_packet(p).is_some());
                prop_assert_ne!(p.anno().flow_hash, 0);
                prop_assert_ne!(p.anno().network_header, NO_HEADER);
            }
        }
        for h in L4_HANDLERS {
            prop_assert_eq!(read(&fast, h), read(&reference, h), "{}", h);
        }
    }
}

/// `frames`' first `k` bytes each, with `EXTRA_LENGTH` the bytes left
/// out: what a capture with that snap length records.
fn cut_batch(frames: &[Vec<u8>], k: &[usize]) -> Batch {
    frames
        .iter()
        .zip(k)
        .map(|(f, &k)| {
            let mut p = Packet::from_slice(&f[..k]);
            p.anno_mut()
                .set_u32(offsets::EXTRA_LENGTH, (f.len() - k) as u32);
            p
        })
        .collect()
}

/// The annotations the parser sets.
fn parsed_annotations(p: &Packet) -> (u16, u16, u32, u8, u16) {
    let a = p.anno();
    (
        a.network_header,
        a.transport_header,
        a.flow_hash,
        a.u8(offsets::L4_PROTO),
        a.u16(offsets::VLAN_TCI),
    )
}

#[test]
fn a_frame_cut_by_the_capture_parses_as_it_was_on_the_wire() {
    // TCP 10.0.0.1:1024 -> 10.0.0.2:80 with 1,000 payload bytes, and the
    // Q-in-Q IPv6 frame with a Hop-by-Hop header: cut at 54 and 90 bytes.
    let mut tcp = hexb(
        "020000000002 020000000001 0800
         45000414 00014000 4006 0000 0a000001 0a000002
         04000050 00000001 00000000 50182000 00000000",
    );
    tcp.resize(14 + 1044, 0x61);
    let mut v6 = hexb(QINQ_V6_TCP);
    v6[26..28].copy_from_slice(&[0x03, 0xf0]); // payload 1,008 bytes
    v6.resize(22 + 40 + 1008, 0x62);
    let frames = [tcp.clone(), v6.clone()];
    for imp in [&[][..], &["IMPL reference"][..]] {
        let mut e = parser(imp);
        let (whole, bad) = e.process(batch(&frames));
        assert!(bad.is_none());
        let a: Vec<_> = whole.iter().map(parsed_annotations).collect();
        let mut e = parser(imp);
        // Twice: the second time the fast parser's common pass takes cut
        // frames.
        for round in 1..=2 {
            let (cut, bad) = e.process(cut_batch(&frames, &[54, 90]));
            assert!(bad.is_none(), "{imp:?}");
            let b: Vec<_> = cut.iter().map(parsed_annotations).collect();
            assert_eq!(a, b);
            let n = (2 * round).to_string();
            assert_eq!((read(&e, "count"), read(&e, "cut")), (n.clone(), n));
        }
        // One byte short of the TCP header (TCP needs 20 bytes, flags
        // included); one byte longer than the wire's length.
        let (_, bad) = e.process(cut_batch(&frames, &[53, 89]));
        assert_eq!(bad.map(|b| b.len()), Some(2));
        assert_eq!(read(&e, "truncated"), "2");
        let mut p = Packet::from_slice(&tcp[..54]);
        p.anno_mut()
            .set_u32(offsets::EXTRA_LENGTH, (tcp.len() - 54 - 1) as u32);
        let (_, bad) = e.process([p].into_iter().collect());
        assert_eq!(bad.map(|b| b.len()), Some(1));
        assert_eq!(read(&e, "bad_length"), "1");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every frame the parser takes whole, cut anywhere with its
    /// `EXTRA_LENGTH` set, is parsed with the same annotations or counted
    /// as truncated (a header it reads was cut), in both implementations.
    /// The cut batch goes through twice: the fast parser's second batch
    /// takes its common pass for cut frames (its first held some).
    #[test]
    fn cut_frames_parse_as_whole_or_are_truncated(seed in 1u64.., n in 1usize..80) {
        let mut r = Rng(seed);
        let frames: Vec<Vec<u8>> = (0..n).map(|_| random_frame(&mut r)).collect();
        for imp in [&[][..], &["IMPL reference"][..]] {
            let (whole, _) = parser(imp).process(batch(&frames));
            let taken: Vec<Vec<u8>> = whole.iter().map(|p| p.data().to_vec()).collect();
            let k: Vec<usize> = taken.iter().map(|f| r.below(f.len() as u64 + 1) as usize).collect();
            let mut e = parser(imp);
            let mut total_bad = 0;
            for _ in 0..2 {
                let (cut, bad) = e.process(cut_batch(&taken, &k));
                total_bad += bad.as_ref().map_or(0, |b| b.len());
                prop_assert_eq!(read(&e, "truncated"), total_bad.to_string());
                let mut cut = cut.iter();
                for (p, (f, &k)) in whole.iter().zip(taken.iter().zip(&k)) {
                    let dropped = bad.iter().flat_map(|b| b.iter()).any(|q| q.len() == k && q.data() == &f[..k]);
                    if !dropped {
                        let c = cut.next().expect("a kept packet");
                        prop_assert_eq!(parsed_annotations(c), parsed_annotations(p));
                    }
                }
            }
            prop_assert_eq!(total_bad % 2, 0);
        }
    }
}

// ---- IPChecksum ----

fn checksummer(args: &[&str]) -> IPChecksum {
    IPChecksum::configure(&ctx(args, 2)).unwrap_or_else(|e| panic!("{e:?}"))
}

/// `f` with every checksum made correct by `IPChecksum(MODE set, IMPL
/// reference)`.
fn fixed(f: &[u8]) -> Vec<u8> {
    let mut e = checksummer(&["MODE set", "IMPL reference"]);
    let (g, _) = e.process(batch(&[f.to_vec()]));
    g.iter()
        .next()
        .map(|p| p.data().to_vec())
        .unwrap_or_default()
}

#[test]
fn ipchecksum_sets_and_verifies_literal_frames() {
    let v4 = fixed(&hexb(V4_UDP));
    // Independent check with linerate_wire's views.
    use linerate_wire::prelude::*;
    let ip = Ipv4Packet::new_checked(&v4[14..]).unwrap();
    assert!(ip.verify_checksum());
    let pair = IpPair::V4 {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
    };
    assert!(UdpPacket::new_checked(ip.payload())
        .unwrap()
        .verify_checksum(&pair));
    assert_eq!(&v4[24..26], &[0x66, 0xca]);
    let v6 = fixed(&hexb(QINQ_V6_TCP));
    let ip = Ipv6Packet::new_checked(&v6[22..]).unwrap();
    let pair = IpPair::V6 {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
    };
    assert!(TcpPacket::new_checked(&ip.payload()[8..])
        .unwrap()
        .verify_checksum(&pair));
    // The fast setter writes the same bytes.
    let mut f = checksummer(&["MODE set"]);
    let (g, _) = f.process(batch(&[hexb(V4_UDP), hexb(QINQ_V6_TCP)]));
    let out: Vec<Vec<u8>> = g.iter().map(|p| p.data().to_vec()).collect();
    assert_eq!(out, [v4.clone(), v6.clone()]);
    // Verify: good, bad IP, bad UDP, bad TCP, UDP zero checksum over IPv4.
    let mut bad_ip = v4.clone();
    bad_ip[24] ^= 1;
    let mut bad_udp = v4.clone();
    bad_udp[45] ^= 1;
    let mut bad_tcp = v6.clone();
    bad_tcp[85] ^= 1;
    let mut zero = v4.clone();
    zero[40..42].fill(0);
    let mut short = v4.clone();
    short[38..40].copy_from_slice(&[0, 40]); // UDP length past the IP packet
    let mut e = checksummer(&[]);
    let (g, b) = e.process(batch(&[
        v4.clone(),
        bad_ip,
        bad_udp,
        bad_tcp,
        zero,
        v6.clone(),
        short,
        vec![0; 10],
    ]));
    assert_eq!((g.len(), b.unwrap().len()), (3, 5));
    for (h, v) in [
        ("count", "3"),
        ("drops", "5"),
        ("unparsed", "1"),
        ("bad_length", "1"),
        ("bad_ip_checksum", "1"),
        ("bad_tcp_checksum", "1"),
        ("bad_udp_checksum", "1"),
    ] {
        assert_eq!(read(&e, h), v, "{h}");
    }
}

#[test]
fn ipchecksum_uses_the_header_annotations() {
    // A raw IPv4 packet (no Ethernet header) located by the annotation.
    let v4 = fixed(&hexb(V4_UDP));
    let mut p = Packet::from_slice(&v4[14..]);
    p.set_network_header(0);
    p.set_transport_header(20);
    let mut e = checksummer(&[]);
    let (g, b) = e.process(Batch::single(p));
    assert!(b.is_none());
    assert_eq!(g.len(), 1);
    let mut p = Packet::from_slice(&v4[14..]);
    p.set_network_header(0);
    p.set_transport_header(20);
    p.data_mut()[27] ^= 1;
    let (_, b) = e.process(Batch::single(p));
    assert!(b.is_some());
    assert_eq!(read(&e, "bad_udp_checksum"), "1");
}

const CK_HANDLERS: [&str; 7] = [
    "count",
    "drops",
    "unparsed",
    "bad_length",
    "bad_ip_checksum",
    "bad_tcp_checksum",
    "bad_udp_checksum",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn ipchecksum_fast_matches_reference(seed in 1u64.., n in 1usize..60, set in any::<bool>(), parsed in any::<bool>()) {
        let mode = if set { "MODE set" } else { "MODE verify" };
        let mut fast = checksummer(&[mode]);
        let mut reference = checksummer(&[mode, "IMPL reference"]);
        let mut r = Rng(seed);
        let frames: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let f = random_frame(&mut r);
                // Half the frames get valid checksums, some then damaged.
                if r.below(2) == 0 {
                    let mut g = fixed(&f);
                    if !g.is_empty() && r.below(2) == 0 {
                        let i = r.below(g.len() as u64) as usize;
                        g[i] ^= 1 << r.below(8);
                    }
                    if g.is_empty() { f } else { g }
                } else {
                    f
                }
            })
            .collect();
        let prep = |b: Batch| -> Batch {
            if parsed {
                let mut l = parser(&[]);
                let (mut g, bad) = l.process(b);
                if let Some(bad) = bad {
                    g.append(bad);
                }
                g
            } else {
                b
            }
        };
        let (fg, fb) = fast.process(prep(batch(&frames)));
        let (rg, rb) = reference.process(prep(batch(&frames)));
        same(snapshot(&Some(fg)), snapshot(&Some(rg)))?;
        same(snapshot(&fb), snapshot(&rb))?;
        for h in CK_HANDLERS {
            prop_assert_eq!(read(&fast, h), read(&reference, h), "{}", h);
        }
    }
}

// ---- Extractor ----

fn extractor(args: &[&str]) -> Extractor {
    Extractor::configure(&ctx(args, 2)).unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn extractor_records_are_byte_exact() {
    let mut v4 = hexb(V4_UDP);
    v4[15] = 0xb9; // DSCP 46, ECN 1
    let mut p = Packet::from_slice(&v4);
    p.set_timestamp_ns(0x0102_0304_0506_0708);
    let keep = p.clone(); // shared data: the original must stay intact
    let mut q = Packet::from_slice(&hexb(QINQ_V6_TCP));
    q.set_timestamp_ns(5);
    let mut e = extractor(&[]);
    let (g, b) = e.process([p, q].into_iter().collect());
    assert!(b.is_none());
    let recs: Vec<Vec<u8>> = g.iter().map(|p| p.data().to_vec()).collect();
    let mut h = parser(&[]);
    let (hv, _) = h.process(batch(&[v4.clone(), hexb(QINQ_V6_TCP)]));
    let hashes: Vec<u32> = hv.iter().map(|p| p.anno().flow_hash).collect();
    let mut want = hexb(
        "0102030405060708
         00000000000000000000ffff0a000001
         00000000000000000000ffff0a000002
         04d2 0050 11 04 2e 01 0000 002e",
    );
    want.extend_from_slice(&hashes[0].to_be_bytes());
    assert_eq!(recs[0], want);
    let mut want = hexb(
        "0000000000000005
         20010db8000000000000000000000001
         20010db8000000000000000000000002
         01bb 1f90 06 06 00 00 2064 005a",
    );
    want.extend_from_slice(&hashes[1].to_be_bytes());
    assert_eq!(recs[1], want);
    assert_eq!(keep.data(), &v4[..]);
    for r in g.iter() {
        assert_eq!(r.network_header_offset(), None);
    }
    let (_, b) = e.process(batch(&[vec![0; 10]]));
    assert_eq!(b.unwrap().len(), 1);
    assert_eq!(read(&e, "truncated"), "1");
    assert_eq!(read(&e, "count"), "2");
}

/// `Extractor`'s counters: `L4Parser`'s but `cut` (it parses no cut frame).
fn ex_handlers() -> impl Iterator<Item = &'static str> {
    L4_HANDLERS.into_iter().filter(|&h| h != "cut")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn extractor_fast_matches_reference(seed in 1u64.., n in 1usize..60, parsed in any::<bool>()) {
        let mut fast = extractor(&[]);
        let mut reference = extractor(&["IMPL reference"]);
        let mut r = Rng(seed);
        let frames: Vec<Vec<u8>> = (0..n).map(|_| random_frame(&mut r)).collect();
        let s = r.next();
        let prep = |b: Batch| -> Batch {
            if parsed {
                let mut l = parser(&[]);
                let (mut g, bad) = l.process(b);
                if let Some(bad) = bad {
                    g.append(bad);
                }
                g
            } else {
                b
            }
        };
        let (fg, fb) = fast.process(prep(annotated(&frames, &mut Rng(s))));
        let (rg, rb) = reference.process(prep(annotated(&frames, &mut Rng(s))));
        for p in fg.iter() {
            prop_assert_eq!(p.len(), 56);
        }
        same(snapshot(&Some(fg)), snapshot(&Some(rg)))?;
        same(snapshot(&fb), snapshot(&rb))?;
        for h in ex_handlers() {
            prop_assert_eq!(read(&fast, h), read(&reference, h), "{}", h);
        }
    }
}
