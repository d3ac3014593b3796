//! The tunnel elements of the accelerated library (NVGRE, VXLAN, GTP-U
//! encapsulation and decapsulation): literal frames compared byte for byte
//! with hand-built ones, checksums verified with `linerate_wire`, round
//! trips, every drop reason, the router's port routing, and differential
//! tests of `IMPL fast` against `IMPL reference` on random frames and
//! configurations.

mod common;

use common::run;
use linerate_elements::encap::{
    gtpudecap::GTPUDecap, gtpuencap::GTPUEncap, nvgredecap::NVGREDecap, nvgreencap::NVGREEncap,
    vxlandecap::VXLANDecap, vxlanencap::VXLANEncap,
};
use linerate_runtime::anno::{offsets, Anno};
use linerate_runtime::{Batch, ConfigureCtx, Element, Packet, Processing, RouterOptions};
use linerate_wire::prelude::*;
use proptest::prelude::*;

const PUSH2: [Processing; 2] = [Processing::Push, Processing::Push];

fn ctx<'a>(args: &[String]) -> ConfigureCtx<'a> {
    ConfigureCtx {
        name: "e",
        config: "",
        args: args.to_vec(),
        inputs: &PUSH2[..1],
        outputs: &PUSH2[..2],
        replica: (0, 1),
        default_burst: 64,
    }
}

fn args(s: &str) -> Vec<String> {
    s.split(',')
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect()
}

/// Either kind of tunnel element, driven directly.
enum Tun {
    NE(NVGREEncap),
    VE(VXLANEncap),
    GE(GTPUEncap),
    ND(NVGREDecap),
    VD(VXLANDecap),
    GD(GTPUDecap),
}

impl Tun {
    fn new(class: &str, a: &str) -> Tun {
        let c = ctx(&args(a));
        let r = match class {
            "NVGREEncap" => NVGREEncap::configure(&c).map(Tun::NE),
            "VXLANEncap" => VXLANEncap::configure(&c).map(Tun::VE),
            "GTPUEncap" => GTPUEncap::configure(&c).map(Tun::GE),
            "NVGREDecap" => NVGREDecap::configure(&c).map(Tun::ND),
            "VXLANDecap" => VXLANDecap::configure(&c).map(Tun::VD),
            "GTPUDecap" => GTPUDecap::configure(&c).map(Tun::GD),
            _ => panic!("{class}"),
        };
        r.unwrap_or_else(|e| panic!("{class}({a}): {e:?}"))
    }
    fn process(&mut self, b: Batch) -> (Batch, Option<Batch>) {
        match self {
            Tun::NE(e) => e.process(b),
            Tun::VE(e) => e.process(b),
            Tun::GE(e) => e.process(b),
            Tun::ND(e) => e.process(b),
            Tun::VD(e) => e.process(b),
            Tun::GD(e) => e.process(b),
        }
    }
    fn el(&self) -> &dyn Element {
        match self {
            Tun::NE(e) => e,
            Tun::VE(e) => e,
            Tun::GE(e) => e,
            Tun::ND(e) => e,
            Tun::VD(e) => e,
            Tun::GD(e) => e,
        }
    }
    fn read(&self, h: &str) -> String {
        self.el().read_handler(h).unwrap_or_else(|| panic!("{h}"))
    }
    fn one(&mut self, f: &[u8], hash: u32) -> Result<Packet, ()> {
        let mut p = Packet::from_slice(f);
        p.anno_mut().flow_hash = hash;
        let (mut good, bad) = self.process(Batch::single(p));
        match bad {
            Some(_) => Err(()),
            None => Ok(good.pop().unwrap()),
        }
    }
}

fn hexb(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The inner frame: Ethernet + IPv4/UDP 10.0.0.1:1234 -> 10.0.0.2:80.
const INNER: &str = "020000000002 020000000001 0800
    45000020 00010000 4011 0000 0a000001 0a000002
    04d20050 000c0000 61626364";

/// Whether the 20-byte IPv4 header `ip` has a correct checksum.
fn ip_ok(ip: &[u8]) -> bool {
    linerate_wire::checksum::sum(&ip[..20]) == 0xffff
}

#[test]
fn nvgre_encap_is_byte_exact() {
    let mut e = Tun::new(
        "NVGREEncap",
        "192.0.2.1, 192.0.2.2, 0x123456, ETH_SRC 2:0:0:0:0:a, ETH_DST 2:0:0:0:0:b, TTL 32, DSCP 10",
    );
    let inner = hexb(INNER);
    let p = e.one(&inner, 0xdead_beef).unwrap();
    let mut want = hexb(
        "02000000000b 02000000000a 0800
         4528 0050 0000 0000 20 2f 0000 c0000201 c0000202
         2000 6558 123456 ef",
    );
    want[14 + 2..14 + 4].copy_from_slice(&(20 + 8 + inner.len() as u16).to_be_bytes());
    let c = linerate_wire::checksum::compute(&want[14..34]);
    want[24..26].copy_from_slice(&c.to_be_bytes());
    want.extend_from_slice(&inner);
    assert_eq!(p.data(), &want[..]);
    assert!(ip_ok(&p.data()[14..34]));
    assert_eq!(p.network_header_offset(), Some(14));
    assert_eq!(p.transport_header_offset(), Some(34));
    assert_eq!(p.anno().u8(offsets::L4_PROTO), 47);
    // The identification counts up.
    let q = e.one(&inner, 1).unwrap();
    assert_eq!(&q.data()[18..20], &[0, 1]);
    assert!(ip_ok(&q.data()[14..34]));
    assert_eq!(e.read("count"), "2");
}

#[test]
fn vxlan_encap_v4_and_v6() {
    let inner = hexb(INNER);
    let mut e = Tun::new("VXLANEncap", "10.1.1.1, 10.2.2.2, 42");
    let p = e.one(&inner, 0x0001_2345).unwrap();
    let d = p.data();
    let total = (20 + 16 + inner.len()) as u16;
    let mut want = hexb(
        "000000000000 000000000000 0800
         4500 0000 0000 0000 40 11 0000 0a010101 0a020202
         e345 12b5 0000 0000
         08000000 00002a00",
    );
    want[16..18].copy_from_slice(&total.to_be_bytes());
    let c = linerate_wire::checksum::compute(&want[14..34]);
    want[24..26].copy_from_slice(&c.to_be_bytes());
    want[38..40].copy_from_slice(&(total - 20).to_be_bytes());
    want.extend_from_slice(&inner);
    assert_eq!(d, &want[..]);
    // IPv6 outer: the UDP checksum is mandatory and correct.
    let mut e = Tun::new("VXLANEncap", "2001:db8::1, 2001:db8::2, 42, DPORT 8472");
    let p = e.one(&inner, 7).unwrap();
    let ip = Ipv6Packet::new_checked(&p.data()[14..]).unwrap();
    assert_eq!(ip.next_header(), IpProtocol::UDP);
    let u = UdpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!((u.src_port(), u.dst_port()), (0xc007, 8472));
    assert_ne!(u.checksum(), 0);
    assert!(u.verify_checksum(&IpPair::V6 {
        src: ip.src_addr(),
        dst: ip.dst_addr()
    }));
    assert_eq!(&u.payload()[8..], &inner[..]);
}

#[test]
fn gtpu_encap_replaces_the_ethernet_header_and_drops_padding() {
    let mut inner = hexb(INNER);
    inner.extend_from_slice(&[0; 6]); // link padding
    let mut e = Tun::new("GTPUEncap", "192.0.2.1, 192.0.2.2, 0x01020304");
    let p = e.one(&inner, 5).unwrap();
    let d = p.data();
    assert_eq!(d.len(), 14 + 20 + 8 + 8 + 32);
    assert!(ip_ok(&d[14..34]));
    assert_eq!(
        &d[34..50],
        &hexb("c005 0868 0030 0000 30ff 0020 01020304")[..]
    );
    assert_eq!(&d[50..], &hexb(INNER)[14..]);
    // A non-IP frame is refused.
    let mut arp = hexb(INNER);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(e.one(&arp, 1).is_err());
    assert_eq!(e.read("not_ip"), "1");
}

#[test]
fn round_trips_restore_the_inner_frame() {
    let inner = hexb(INNER);
    for (enc, dec, id) in [
        ("NVGREEncap", "NVGREDecap", "77"),
        ("VXLANEncap", "VXLANDecap", "77"),
        ("GTPUEncap", "GTPUDecap", "77"),
    ] {
        for addrs in ["10.0.0.1, 10.0.0.2", "fe80::1, fe80::2"] {
            let mut e = Tun::new(enc, &format!("{addrs}, {id}, ETH_SRC 2:0:0:0:0:1"));
            let mut d = Tun::new(dec, id);
            let p = e.one(&inner, 9).unwrap();
            let q = d
                .one(p.data(), 0)
                .unwrap_or_else(|_| panic!("{enc} {addrs}"));
            if enc == "GTPUEncap" {
                assert_eq!(&q.data()[14..], &inner[14..]);
                assert_eq!(&q.data()[6..14], &hexb("020000000001 0800")[..]);
                assert_eq!(q.network_header_offset(), Some(14));
            } else {
                assert_eq!(q.data(), &inner[..], "{enc} {addrs}");
                assert_eq!(q.network_header_offset(), None);
            }
            assert_eq!(q.anno().u32(offsets::AGGREGATE), 77);
            assert_eq!(q.anno().flow_hash, 0);
            let mut other = Tun::new(dec, "78");
            assert!(other.one(p.data(), 0).is_err());
            assert_eq!(other.read("wrong_id"), "1");
        }
    }
}

#[test]
fn decap_counts_every_reason() {
    let inner = hexb(INNER);
    let mut e = Tun::new("GTPUEncap", "10.0.0.1, 10.0.0.2, 5");
    let good = e.one(&inner, 9).unwrap().data().to_vec();
    let mut d = Tun::new("GTPUDecap", "");
    let mut frames = vec![good[..30].to_vec()];
    let mut f = good.clone();
    f[12] = 0x81;
    frames.push(f); // not_ip
    let mut f = good.clone();
    f[14] = 0x55;
    frames.push(f); // bad_ip
    let mut f = good.clone();
    f[36..38].copy_from_slice(&[0x12, 0xb5]);
    frames.push(f); // not_tunnel (port 4789)
    let mut f = good.clone();
    f[42] = 0x50;
    frames.push(f); // bad_header (version 2)
    let mut f = good.clone();
    f[43] = 1;
    frames.push(f); // not_gpdu (echo request)
    let mut f = good.clone();
    f[50] = 0x15;
    frames.push(f); // bad_inner
    frames.push(good.clone());
    let (ok, bad) = d.process(frames.iter().map(|f| Packet::from_slice(f)).collect());
    assert_eq!((ok.len(), bad.unwrap().len()), (1, 7));
    for h in [
        "truncated",
        "not_ip",
        "bad_ip",
        "not_tunnel",
        "bad_header",
        "not_gpdu",
        "bad_inner",
    ] {
        assert_eq!(d.read(h), "1", "{h}");
    }
    assert_eq!(d.read("drops"), "7");
    let mut w = Tun::new("GTPUDecap", "6");
    assert!(w.one(&good, 0).is_err());
    assert_eq!(w.read("wrong_id"), "1");
}

#[test]
fn bad_configurations_are_reported() {
    let c = ctx(&args("10.0.0.1, fe80::1, 5"));
    assert!(NVGREEncap::configure(&c).is_err());
    let c = ctx(&args("10.0.0.1, 10.0.0.2, 0x1000000"));
    assert!(VXLANEncap::configure(&c).is_err());
    let c = ctx(&args("IMPL slow"));
    assert!(NVGREDecap::configure(&c).is_err());
    let c = ctx(&args("ANNO NOPE"));
    assert!(VXLANDecap::configure(&c).is_err());
}

#[test]
fn router_routes_rejected_packets_to_output_1() {
    let hex: String = hexb(INNER).iter().map(|b| format!("{b:02x}")).collect();
    let conf = format!(
        "InfiniteSource(DATA \\<{hex}>, LIMIT 4, STOP true) -> L4Parser
           -> NVGREEncap(10.0.0.1, 10.0.0.2, 9) -> d :: NVGREDecap(9) -> a :: Counter -> Discard;
         InfiniteSource(DATA \\<{hex}>, LIMIT 3) -> d;
         d[1] -> b :: Counter -> Discard;"
    );
    let r = run(&conf, RouterOptions::default());
    let h = |n: &str| r.handle().call(n, None).unwrap().trim().to_string();
    assert_eq!(h("a.count"), "4");
    assert_eq!(h("b.count"), "3");
    assert_eq!(h("d.not_tunnel"), "3");
}

// ---- differential tests ----

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
}

/// An inner frame: mostly Ethernet/IPv4 or IPv6 with a random payload,
/// sometimes anything.
fn inner_frame(r: &mut Rng) -> Vec<u8> {
    let body = r.below(60) as usize;
    let mut f: Vec<u8> = (0..14).map(|_| r.next() as u8).collect();
    match r.below(4) {
        0 | 1 => {
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0];
            h.extend((0..8).map(|_| r.next() as u8));
            let total = (20 + body) as u16;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&h);
        }
        2 => {
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            let mut h = vec![0x60, 0, 0, 0, 0, 0, 17, 64];
            h[4..6].copy_from_slice(&(body as u16).to_be_bytes());
            h.extend((0..32).map(|_| r.next() as u8));
            f.extend_from_slice(&h);
        }
        _ => {}
    }
    f.extend((0..body + r.below(3) as usize).map(|_| r.next() as u8));
    if r.below(8) == 0 {
        f.truncate(r.below(f.len() as u64 + 1) as usize);
    }
    f
}

/// A random encapsulator configuration for `class`.
fn encap_config(class: &str, r: &mut Rng) -> String {
    let addrs = if r.below(2) == 0 {
        format!("10.0.{}.1, 10.9.0.{}", r.below(256), r.below(256))
    } else {
        format!("2001:db8::{:x}, fe80::{:x}", r.below(65536), r.below(65536))
    };
    let id = if class == "GTPUEncap" {
        r.next() as u32
    } else {
        r.next() as u32 & 0xff_ffff
    };
    let mut s = format!(
        "{addrs}, {id}, ETH_SRC 2:0:0:0:0:{:x}, TTL {}, DSCP {}",
        r.below(256),
        r.below(256),
        r.below(64)
    );
    if class != "NVGREEncap" && r.below(2) == 0 {
        s.push_str(&format!(", DPORT {}", r.below(65536)));
    }
    s
}

fn annotated(frames: &[Vec<u8>], seed: u64) -> Batch {
    let mut r = Rng(seed);
    frames
        .iter()
        .map(|f| {
            let mut p = Packet::from_slice(f);
            let a = p.anno_mut();
            a.flow_hash = if r.below(3) == 0 { 0 } else { r.next() as u32 };
            for b in a.user.iter_mut() {
                *b = r.next() as u8;
            }
            p
        })
        .collect()
}

fn snapshot(b: &Option<Batch>) -> Vec<(Vec<u8>, Anno)> {
    b.iter()
        .flat_map(|b| b.iter())
        .map(|p| {
            // Header annotations are compared relative to the data start.
            let mut a = *p.anno();
            a.network_header = p.network_header_offset().map_or(0xffff, |o| o as u16);
            a.transport_header = p.transport_header_offset().map_or(0xffff, |o| o as u16);
            (p.data().to_vec(), a)
        })
        .collect()
}

fn same(a: Vec<(Vec<u8>, Anno)>, b: Vec<(Vec<u8>, Anno)>) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        prop_assert_eq!(x, y, "packet {}", i);
    }
    Ok(())
}

const ENC_HANDLERS: [&str; 4] = ["count", "drops", "not_ip", "too_long"];
const DEC_HANDLERS: [&str; 10] = [
    "count",
    "drops",
    "truncated",
    "not_ip",
    "bad_ip",
    "not_tunnel",
    "bad_header",
    "wrong_id",
    "not_gpdu",
    "bad_inner",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn encap_and_decap_fast_match_reference(seed in 1u64.., kind in 0usize..3, n in 1usize..40) {
        let (enc, dec) = [
            ("NVGREEncap", "NVGREDecap"),
            ("VXLANEncap", "VXLANDecap"),
            ("GTPUEncap", "GTPUDecap"),
        ][kind];
        let mut r = Rng(seed);
        let conf = encap_config(enc, &mut r);
        let mut ef = Tun::new(enc, &conf);
        let mut er = Tun::new(enc, &format!("{conf}, IMPL reference"));
        let frames: Vec<Vec<u8>> = (0..n).map(|_| inner_frame(&mut r)).collect();
        let s = r.next();
        let (fg, fb) = ef.process(annotated(&frames, s));
        let (rg, rb) = er.process(annotated(&frames, s));
        let fg = Some(fg);
        same(snapshot(&fg), snapshot(&Some(rg)))?;
        same(snapshot(&fb), snapshot(&rb))?;
        for h in ENC_HANDLERS {
            prop_assert_eq!(ef.read(h), er.read(h), "{}", h);
        }
        // Outer IPv4 checksums are valid.
        for p in fg.iter().flat_map(|b| b.iter()) {
            if p.data()[12..14] == [0x08, 0x00] {
                prop_assert!(ip_ok(&p.data()[14..34]));
            }
        }
        // Decapsulate the results, damaged at random.
        let id = if r.below(2) == 0 { String::new() } else { format!("{}", r.below(3)) };
        let dport = if dec != "NVGREDecap" && conf.contains("DPORT") && r.below(2) == 0 {
            conf.split("DPORT ").nth(1).map(|p| format!(", DPORT {p}")).unwrap_or_default()
        } else {
            String::new()
        };
        let dconf = format!("{id}{dport}");
        let mut df = Tun::new(dec, &dconf);
        let mut dr = Tun::new(dec, &format!("{dconf}{}IMPL reference", if dconf.is_empty() { "" } else { ", " }));
        let mut outer: Vec<Vec<u8>> = fg.iter().flat_map(|b| b.iter()).map(|p| p.data().to_vec()).collect();
        for f in outer.iter_mut() {
            match r.below(4) {
                0 if !f.is_empty() => {
                    let i = r.below(f.len().min(80) as u64) as usize;
                    f[i] = r.next() as u8;
                }
                1 => f.truncate(r.below(f.len() as u64 + 1) as usize),
                _ => {}
            }
        }
        let s = r.next();
        let (fg, fb) = df.process(annotated(&outer, s));
        let (rg, rb) = dr.process(annotated(&outer, s));
        same(snapshot(&Some(fg)), snapshot(&Some(rg)))?;
        same(snapshot(&fb), snapshot(&rb))?;
        for h in DEC_HANDLERS {
            prop_assert_eq!(df.read(h), dr.read(h), "{}", h);
        }
    }
}

/// `frames` as packets of every kind the fast path treats apart: own
/// buffers, buffers with little headroom, clones (shared with a handle
/// kept in `keep`) and external views of `frames`; flow hash annotations
/// as in [`annotated`].
fn mixed_buffers(frames: &[Vec<u8>], seed: u64, keep: &mut Vec<Packet>) -> Batch {
    let mut r = Rng(seed);
    frames
        .iter()
        .map(|f| {
            let mut p = match r.below(4) {
                0 => Packet::from_slice(f),
                1 => {
                    let mut p = Packet::from_slice(f);
                    p.push(100);
                    p.data_mut()[..f.len()].copy_from_slice(f);
                    p.take(100);
                    p
                }
                2 => {
                    let p = Packet::from_slice(f);
                    keep.push(p.clone());
                    p
                }
                // SAFETY: `frames` outlives the batch and is not changed.
                _ => unsafe { Packet::from_external(f.as_ptr(), f.len()) },
            };
            p.anno_mut().flow_hash = if r.below(3) == 0 { 0 } else { r.next() as u32 };
            p
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// The fast path leaves shared buffers, short headroom and hashes that
    /// need `l4::parse_general` to a second pass, and batches over 256
    /// packets to a per-packet loop: the results, their order and the
    /// identifications are the reference's.
    #[test]
    fn encap_fast_matches_reference_on_any_buffer_and_batch_size(seed in 1u64.., kind in 0usize..3, n in 1usize..300) {
        let enc = ["NVGREEncap", "VXLANEncap", "GTPUEncap"][kind];
        let mut r = Rng(seed);
        let conf = encap_config(enc, &mut r);
        let mut ef = Tun::new(enc, &conf);
        let mut er = Tun::new(enc, &format!("{conf}, IMPL reference"));
        for _ in 0..2 {
            let frames: Vec<Vec<u8>> = (0..n).map(|_| inner_frame(&mut r)).collect();
            let s = r.next();
            let (mut kf, mut kr) = (Vec::new(), Vec::new());
            let (fg, fb) = ef.process(mixed_buffers(&frames, s, &mut kf));
            let (rg, rb) = er.process(mixed_buffers(&frames, s, &mut kr));
            same(snapshot(&Some(fg)), snapshot(&Some(rg)))?;
            same(snapshot(&fb), snapshot(&rb))?;
            for h in ENC_HANDLERS {
                prop_assert_eq!(ef.read(h), er.read(h), "{}", h);
            }
            // The clones still hold the frames as they were.
            prop_assert_eq!(kf.iter().map(|p| p.data().to_vec()).collect::<Vec<_>>(),
                kr.iter().map(|p| p.data().to_vec()).collect::<Vec<_>>());
        }
    }
}
