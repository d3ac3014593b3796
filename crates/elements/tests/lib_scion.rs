//! SCIONRouter on literal frames: transit in both directions, crossover,
//! peering, outbound and inbound delivery, one-hop paths, every SCMP error
//! the router emits with its code and pointer, the slow path, malformed
//! input, and a differential test of `IMPL fast` against `IMPL reference`.
//! Every single-frame case also runs through `nfs/scion-br.click` (the
//! router built from step elements, a counter on each step's side outputs)
//! and must give the same bytes and handler values as `SCIONRouter`; the
//! step whose output the frame left by is checked where it matters.

mod common;

use linerate_elements::scion::mac::{cmac_reference, derive_key, mac_input};
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_runtime::RouterOptions;
use linerate_wire::scion::path::{Meta, StandardPath};
use linerate_wire::scion::{header, scmp, Ia};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

const NOW: u64 = 1_700_000_100;
const TS: u32 = 1_700_000_000;
const MASTER: &[u8] = b"scion-vectors-k0";
const LOCAL: &str = "1-ff00:0:110";

const TOPO: &str = r#"{
  "isd_as": "1-ff00:0:110", "mtu": 1472,
  "control_service": {"cs1": {"addr": "10.0.0.10:31000"}},
  "border_routers": {
    "br1": {"internal_addr": "10.0.0.1:30042", "interfaces": {
      "1": {"underlay": {"local": "192.0.2.1:50001", "remote": "192.0.2.101:50000"}, "isd_as": "1-ff00:0:100", "link_to": "parent"},
      "2": {"underlay": {"local": "192.0.2.2:50002", "remote": "192.0.2.102:50000"}, "isd_as": "1-ff00:0:111", "link_to": "child"},
      "3": {"underlay": {"local": "[2001:db8::1]:50003", "remote": "[2001:db8::103]:50000"}, "isd_as": "1-ff00:0:112", "link_to": "child"},
      "4": {"underlay": {"local": "192.0.2.4:50004", "remote": "192.0.2.104:50000"}, "isd_as": "1-ff00:0:120", "link_to": "peer"},
      "5": {"underlay": {"local": "192.0.2.5:50005", "remote": "192.0.2.105:50000"}, "isd_as": "1-ff00:0:130", "link_to": "core"}}},
    "br2": {"internal_addr": "10.0.0.2:30042", "interfaces": {
      "6": {"underlay": {"local": "192.0.2.6:50006", "remote": "192.0.2.106:50000"}, "isd_as": "1-ff00:0:101", "link_to": "parent"}}}
  }}"#;

fn key() -> [u8; 16] {
    derive_key(MASTER)
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-scion-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(d.join("keys")).unwrap();
    std::fs::write(d.join("topology.json"), TOPO).unwrap();
    std::fs::write(d.join("keys/master0.key"), "c2Npb24tdmVjdG9ycy1rMA==\n").unwrap();
    d
}

fn ia(s: &str) -> u64 {
    Ia::parse(s).unwrap().0
}

/// A hop in construction order.
#[derive(Clone, Copy)]
struct H {
    cin: u16,
    ceg: u16,
    flags: u8,
}

fn h(cin: u16, ceg: u16) -> H {
    H { cin, ceg, flags: 0 }
}

/// A segment in construction order; `betas[k]` is the accumulator of hop k.
struct Seg {
    cons: bool,
    hops: Vec<H>,
    macs: Vec<[u8; 6]>,
    betas: Vec<u16>,
}

fn seg(cons: bool, beta0: u16, hops: Vec<H>) -> Seg {
    let mut betas = vec![beta0];
    let mut macs = Vec::new();
    for hp in &hops {
        let b = *betas.last().unwrap();
        let m = cmac_reference(&key(), &mac_input(b, TS, 63, hp.cin, hp.ceg));
        macs.push(m[..6].try_into().unwrap());
        betas.push(b ^ u16::from_be_bytes([m[0], m[1]]));
    }
    Seg {
        cons,
        hops,
        macs,
        betas,
    }
}

/// Path bytes: segments in travel order with the given SegIDs.
fn path(segs: &[(&Seg, u16)], curr_inf: u8, curr_hf: u8) -> Vec<u8> {
    let mut seg_len = [0u8; 3];
    for (i, (s, _)) in segs.iter().enumerate() {
        seg_len[i] = s.hops.len() as u8;
    }
    let mut v = Meta {
        curr_inf,
        curr_hf,
        seg_len,
    }
    .to_word()
    .to_be_bytes()
    .to_vec();
    for (s, id) in segs {
        v.extend_from_slice(&[u8::from(s.cons), 0]);
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(&TS.to_be_bytes());
    }
    for (s, _) in segs {
        let order: Vec<usize> = if s.cons {
            (0..s.hops.len()).collect()
        } else {
            (0..s.hops.len()).rev().collect()
        };
        for k in order {
            let hp = s.hops[k];
            v.extend_from_slice(&[hp.flags, 63]);
            v.extend_from_slice(&hp.cin.to_be_bytes());
            v.extend_from_slice(&hp.ceg.to_be_bytes());
            v.extend_from_slice(&s.macs[k]);
        }
    }
    v
}

/// A SCION/UDP packet (v4 hosts) with the given path.
fn scion(dst: &str, src: &str, path_type: u8, path: &[u8], dport: u16) -> Vec<u8> {
    let hdr_len = 12 + 24 + path.len();
    let payload = b"hello scion".to_vec();
    let l4_len = 8 + payload.len();
    let mut v = vec![0x00, 0xb0, 0xbe, 0xef, 17, (hdr_len / 4) as u8];
    v.extend_from_slice(&(l4_len as u16).to_be_bytes());
    v.extend_from_slice(&[path_type, 0x00, 0, 0]);
    v.extend_from_slice(&ia(dst).to_be_bytes());
    v.extend_from_slice(&ia(src).to_be_bytes());
    v.extend_from_slice(&[10, 1, 0, 7, 10, 2, 0, 9]);
    v.extend_from_slice(path);
    v.extend_from_slice(&40000u16.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&(l4_len as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&payload);
    let hp = header::Packet::new_checked(&v[..]).unwrap();
    let c = linerate_wire::scion::udp::checksum(&hp, 17, &v[hdr_len..], 6);
    v[hdr_len + 6..hdr_len + 8].copy_from_slice(&c.to_be_bytes());
    v
}

fn ones(b: &[u8]) -> u32 {
    let mut s = 0u32;
    for c in b.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// An Ethernet/IP/UDP frame from `src` to `dst` (`ip:port`).
fn frame(src: &str, dst: &str, scion: &[u8]) -> Vec<u8> {
    let s: std::net::SocketAddr = src.parse().unwrap();
    let d: std::net::SocketAddr = dst.parse().unwrap();
    let ulen = (8 + scion.len()) as u16;
    let mut udp = s.port().to_be_bytes().to_vec();
    udp.extend_from_slice(&d.port().to_be_bytes());
    udp.extend_from_slice(&ulen.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(scion);
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    let pseudo = match (s.ip(), d.ip()) {
        (std::net::IpAddr::V4(a), std::net::IpAddr::V4(b)) => {
            f.extend_from_slice(&[8, 0, 0x45, 0]);
            f.extend_from_slice(&(20 + ulen).to_be_bytes());
            f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
            f.extend_from_slice(&a.octets());
            f.extend_from_slice(&b.octets());
            let c = !fold(ones(&f[14..34]));
            f[24..26].copy_from_slice(&c.to_be_bytes());
            ones(&a.octets()) + ones(&b.octets()) + 17 + u32::from(ulen)
        }
        (std::net::IpAddr::V6(a), std::net::IpAddr::V6(b)) => {
            f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
            f.extend_from_slice(&ulen.to_be_bytes());
            f.extend_from_slice(&[17, 64]);
            f.extend_from_slice(&a.octets());
            f.extend_from_slice(&b.octets());
            ones(&a.octets()) + ones(&b.octets()) + 17 + u32::from(ulen)
        }
        _ => panic!("mixed families"),
    };
    let c = !fold(pseudo + ones(&udp));
    udp[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    f.extend_from_slice(&udp);
    f
}

/// Checks the IP and UDP checksums of an output frame and returns
/// (source, destination, SCION bytes).
fn unframe(f: &[u8]) -> (String, String, Vec<u8>) {
    let (s, d, u) = if f[12..14] == [8, 0] {
        assert_eq!(fold(ones(&f[14..34])), 0xffff, "IPv4 header checksum");
        let s = std::net::Ipv4Addr::new(f[26], f[27], f[28], f[29]);
        let d = std::net::Ipv4Addr::new(f[30], f[31], f[32], f[33]);
        (s.to_string(), d.to_string(), 34)
    } else {
        let s = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
        let d = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&f[38..54]).unwrap());
        (format!("[{s}]"), format!("[{d}]"), 54)
    };
    let ulen = usize::from(u16::from_be_bytes([f[u + 4], f[u + 5]]));
    assert_eq!(f.len(), u + ulen);
    let pseudo = if u == 34 {
        ones(&f[26..34])
    } else {
        ones(&f[22..54])
    } + 17
        + ulen as u32;
    assert_eq!(fold(pseudo + ones(&f[u..])), 0xffff, "UDP checksum");
    let sp = u16::from_be_bytes([f[u], f[u + 1]]);
    let dp = u16::from_be_bytes([f[u + 2], f[u + 3]]);
    (
        format!("{s}:{sp}"),
        format!("{d}:{dp}"),
        f[u + 8..].to_vec(),
    )
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path, LinkType::ETHERNET, 65535, false).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write(1_000_000_000 * (i as u64 + 1), f.len() as u32, f)
            .unwrap();
    }
    w.flush().unwrap();
}

fn records(p: &Path) -> Vec<Vec<u8>> {
    let mut r = PcapReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

struct Out {
    sent: Vec<Vec<u8>>,
    slow: Vec<Vec<u8>>,
    dropped: Vec<Vec<u8>>,
    handlers: Vec<(String, String)>,
    /// The step-element side outputs (`step[port]`) frames left by (steps
    /// form only).
    ports: Vec<String>,
}

impl Out {
    fn h(&self, name: &str) -> &str {
        &self
            .handlers
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name}"))
            .1
    }
}

fn run(frames: &[Vec<u8>], imp: &str, tag: &str) -> Out {
    let dir = scratch(tag);
    let inp = dir.join(format!("{tag}-in.pcap"));
    write_pcap(&inp, frames);
    let o = |n: &str| dir.join(format!("{tag}-{imp}-{n}.pcap"));
    let text = format!(
        "FromDump({}, STOP true) -> br :: SCIONRouter(CONFIG {}, NOW {NOW}, IMPL {imp}) -> ToDump({});\n\
         br[1] -> ToDump({}); br[2] -> ToDump({});",
        inp.display(),
        dir.display(),
        o("sent").display(),
        o("slow").display(),
        o("drop").display()
    );
    let mut side = Vec::new();
    let r = if imp == "steps" || imp == "xform" {
        // "xform": nfs/scion-br.click as written, fused into one
        // SCIONRouter by the configuration pass `linerate run` applies.
        let text = if imp == "steps" {
            let (text, names) = steps_text();
            side = names;
            text
        } else {
            std::fs::read_to_string(nfs("scion-br.click")).unwrap()
        };
        let vars = [
            ("CONFIG", dir.display().to_string()),
            ("INPUT", inp.display().to_string()),
            ("OUTPUT", o("sent").display().to_string()),
            ("SLOW", o("slow").display().to_string()),
            ("DROPPED", o("drop").display().to_string()),
            ("NOW", NOW.to_string()),
        ];
        let reg = linerate_elements::registry();
        let opts = linerate_lang::ParseOptions {
            vars: vars.map(|(k, v)| (k.to_string(), v)).to_vec(),
            catalog: &reg,
            clickpath: vec![],
        };
        let mut c = linerate_lang::parse_str(&text, "scion-br.click", &opts)
            .unwrap_or_else(|e| panic!("{e}"));
        let notes = linerate_elements::scion::fuse::fuse(&mut c);
        assert_eq!(notes.len(), usize::from(imp == "xform"), "{notes:?}");
        let mut r = linerate_runtime::Router::build(&c, &reg, RouterOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        r.run();
        r
    } else {
        common::run(&text, RouterOptions::default())
    };
    let mut handlers = Vec::new();
    for name in [
        "drops_underlay",
        "drops_unknown_link",
        "drops_malformed",
        "drops_invalid_path",
        "drops_path_type",
        "drops_transit_source",
        "drops_no_scmp",
        "drops_one_hop",
        "drops_undeliverable",
        "scmp_19",
        "scmp_33",
        "scmp_34",
        "scmp_48",
        "scmp_49",
        "scmp_50",
        "scmp_51",
        "scmp_52",
        "scmp_53",
        "scmp_unreachable",
        "slow_path",
        "if1_in_packets",
        "if1_out_packets",
        "if2_in_packets",
        "if2_out_packets",
        "if3_out_bytes",
        "if6_out_packets",
        "internal_in_packets",
        "internal_out_packets",
        "internal_out_bytes",
    ] {
        let v = r
            .handle()
            .call(&format!("br.{name}"), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        handlers.push((name.to_string(), v.trim().to_string()));
    }
    let mut ports = Vec::new();
    for (counter, port) in side {
        let n = r.handle().call(&format!("{counter}.count"), None).unwrap();
        if n.trim() != "0" {
            ports.push(port);
        }
    }
    drop(r);
    Out {
        sent: records(&o("sent")),
        slow: records(&o("slow")),
        dropped: records(&o("drop")),
        handlers,
        ports,
    }
}

/// `nfs/scion-br.click` with a `Counter` on every step's side output
/// (`a[k] -> b` becomes `a[k] -> a_k :: Counter -> b`); the counters'
/// names with the `a[k]` they count.
fn nfs(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../nfs")
        .join(file)
}

fn steps_text() -> (String, Vec<(String, String)>) {
    let text = std::fs::read_to_string(nfs("scion-br.click")).unwrap();
    let mut out = String::new();
    let mut names = Vec::new();
    for line in text.lines() {
        let side = line.split_once("] -> ").and_then(|(a, rest)| {
            let (elem, port) = a.split_once('[')?;
            Some((elem.to_string(), port.to_string(), rest.to_string()))
        });
        match side {
            Some((elem, port, rest)) if !line.starts_with("//") => {
                let c = format!("{elem}_{port}");
                out.push_str(&format!("{elem}[{port}] -> {c} :: Counter -> {rest}\n"));
                names.push((c, format!("{elem}[{port}]")));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, names)
}

/// Runs one frame through `SCIONRouter` and through the step elements:
/// the same frames out and the same handler values. Returns the steps'.
fn run1(f: Vec<u8>, tag: &str) -> Out {
    let fused = run(std::slice::from_ref(&f), "fast", tag);
    let steps = run(&[f], "steps", tag);
    assert_eq!(fused.sent, steps.sent, "sent, {tag}");
    assert_eq!(fused.slow, steps.slow, "slow, {tag}");
    assert_eq!(fused.dropped, steps.dropped, "dropped, {tag}");
    assert_eq!(fused.handlers, steps.handlers, "handlers, {tag}");
    steps
}

fn meta_of(s: &[u8]) -> Meta {
    let hp = header::Packet::new_checked(s).unwrap();
    StandardPath::new_checked(hp.path()).unwrap().meta()
}

fn seg_id_of(s: &[u8], i: usize) -> u16 {
    let hp = header::Packet::new_checked(s).unwrap();
    StandardPath::new_checked(hp.path())
        .unwrap()
        .info(i)
        .seg_id()
}

// Up segment 1-ff00:0:100 (parent) -> 110 (us) -> 111 (child):
// construction order: hop0 at 100 (egress 1 there), hop1 at us (in 1, eg 2), hop2 at 111 (in 9).
fn up_seg() -> Seg {
    seg(false, 0x1234, vec![h(0, 7), h(1, 2), h(9, 0)])
}

#[test]
fn transit_up_child_to_parent() {
    let s = up_seg();
    // Travel order: 111, us, 100; at us: CurrHF 1; the packet carries beta_2
    // (the 111 router did the ingress-side update nothing: it is the source).
    let p = path(&[(&s, s.betas[2])], 0, 1);
    let pkt = scion("1-ff00:0:100", "1-ff00:0:111", 1, &p, 5000);
    let o = run1(frame("192.0.2.102:50000", "192.0.2.2:50002", &pkt), "up");
    assert_eq!(o.sent.len(), 1, "{:?}", o.handlers);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("192.0.2.1:50001", "192.0.2.101:50000")
    );
    assert_eq!(
        meta_of(&out),
        Meta {
            curr_inf: 0,
            curr_hf: 2,
            seg_len: [3, 0, 0]
        }
    );
    assert_eq!(seg_id_of(&out, 0), s.betas[1]);
    let mut expect = pkt.clone();
    expect[36..40].copy_from_slice(&meta_of(&out).to_word().to_be_bytes());
    expect[42..44].copy_from_slice(&s.betas[1].to_be_bytes());
    assert_eq!(out, expect);
    assert_eq!((o.h("if2_in_packets"), o.h("if1_out_packets")), ("1", "1"));
}

#[test]
fn transit_down_parent_to_child() {
    // Down segment: 100 -> us -> 111, ConsDir=1, at us hop 1 carries beta_1.
    let s = seg(true, 0x4242, vec![h(0, 7), h(1, 2), h(9, 0)]);
    let p = path(&[(&s, s.betas[1])], 0, 1);
    let pkt = scion("1-ff00:0:111", "1-ff00:0:100", 1, &p, 5000);
    let o = run1(frame("192.0.2.101:50000", "192.0.2.1:50001", &pkt), "down");
    assert_eq!(o.sent.len(), 1, "{:?}", o.handlers);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("192.0.2.2:50002", "192.0.2.102:50000")
    );
    assert_eq!(meta_of(&out).curr_hf, 2);
    assert_eq!(seg_id_of(&out, 0), s.betas[2]);
}

#[test]
fn crossover_child_to_child_over_ipv6() {
    // Up segment from 111 to us (we are its first hop in construction), then
    // down segment from us to 112 over IF 3 (IPv6 underlay).
    let up = seg(false, 0x0101, vec![h(0, 2), h(9, 0)]);
    let down = seg(true, 0x0202, vec![h(0, 3), h(8, 0)]);
    // Travel: hop (111) idx0, us idx1 [seg0]; us idx2, 112 idx3 [seg1].
    let p = path(&[(&up, up.betas[1]), (&down, down.betas[0])], 0, 1);
    let pkt = scion("1-ff00:0:112", "1-ff00:0:111", 1, &p, 5000);
    let o = run1(frame("192.0.2.102:50000", "192.0.2.2:50002", &pkt), "xover");
    assert_eq!(o.ports, ["route[1]"]);
    assert_eq!(o.sent.len(), 1, "{:?}", o.handlers);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("[2001:db8::1]:50003", "[2001:db8::103]:50000")
    );
    assert_eq!(
        meta_of(&out),
        Meta {
            curr_inf: 1,
            curr_hf: 3,
            seg_len: [2, 2, 0]
        }
    );
    assert_eq!(seg_id_of(&out, 0), up.betas[0]);
    assert_eq!(seg_id_of(&out, 1), down.betas[1]);
    assert_eq!(o.h("if3_out_bytes"), pkt.len().to_string());
}

#[test]
fn peering_child_to_peer() {
    use linerate_wire::scion::path::INFO_PEER;
    // Up segment (ConsDir=0) 111 -> us ending in our peering hop (in from
    // the child on IF 2, out to the peer on IF 4), then the peer's segment
    // (ConsDir=1). Peering hops are not chained: the packet carries the
    // SegID our hop's MAC was made with, and it stays.
    let up = seg(false, 0x0abc, vec![h(4, 2), h(9, 0)]);
    let peer = seg(true, 0x0def, vec![h(7, 8), h(9, 0)]);
    let mut p = path(&[(&up, up.betas[0]), (&peer, peer.betas[0])], 0, 1);
    p[4] |= INFO_PEER;
    p[16] |= INFO_PEER;
    let pkt = scion("1-ff00:0:121", "1-ff00:0:111", 1, &p, 5000);
    let o = run1(frame("192.0.2.102:50000", "192.0.2.2:50002", &pkt), "peer");
    assert_eq!(o.sent.len(), 1, "{:?}", o.handlers);
    assert!(o.ports.is_empty());
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("192.0.2.4:50004", "192.0.2.104:50000")
    );
    assert_eq!(
        meta_of(&out),
        Meta {
            curr_inf: 1,
            curr_hf: 2,
            seg_len: [2, 2, 0]
        }
    );
    assert_eq!(seg_id_of(&out, 0), up.betas[0]);
    assert_eq!(o.h("if2_in_packets"), "1");
}

#[test]
fn outbound_from_host_and_to_sibling() {
    // Up segment whose first traversed hop is ours: us -> 100 via IF 1.
    let s = seg(false, 0x7777, vec![h(0, 7), h(1, 0)]);
    let p = path(&[(&s, s.betas[1])], 0, 0);
    let pkt = scion("1-ff00:0:100", LOCAL, 1, &p, 5000);
    let o = run1(frame("10.2.0.9:31000", "10.0.0.1:30042", &pkt), "outbound");
    assert_eq!(o.sent.len(), 1, "{:?}", o.handlers);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("192.0.2.1:50001", "192.0.2.101:50000")
    );
    assert_eq!(meta_of(&out).curr_hf, 1);
    assert_eq!(o.h("internal_in_packets"), "1");
    // A host may not use a sibling's interface: egress 6 belongs to br2.
    let s = seg(false, 0x7777, vec![h(0, 7), h(6, 0)]);
    let p = path(&[(&s, s.betas[1])], 0, 0);
    let pkt = scion("1-ff00:0:113", LOCAL, 1, &p, 5000);
    let o = run1(
        frame("10.2.0.9:31000", "10.0.0.1:30042", &pkt),
        "sibling-host",
    );
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 49, 36 + 4 + 8);
    assert_eq!(o.ports, ["egress[1]"]);
    // Transit from our child to a sibling's parent interface goes to br2
    // with only the ingress-side work done (ConsDir=0 SegID update).
    let s = seg(false, 0x5151, vec![h(0, 5), h(6, 2), h(9, 0)]);
    let p = path(&[(&s, s.betas[2])], 0, 1);
    let pkt = scion("1-ff00:0:101", "1-ff00:0:111", 1, &p, 5000);
    let o = run1(
        frame("192.0.2.102:50000", "192.0.2.2:50002", &pkt),
        "to-sibling",
    );
    assert_eq!(o.h("if6_out_packets"), "1", "{:?}", o.handlers);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("10.0.0.1:30042", "10.0.0.2:30042")
    );
    assert_eq!(meta_of(&out).curr_hf, 1);
    assert_eq!(seg_id_of(&out, 0), s.betas[1]);
}

#[test]
fn inbound_delivery() {
    let s = seg(true, 0x3030, vec![h(0, 7), h(1, 0)]);
    let p = path(&[(&s, s.betas[1])], 0, 1);
    let pkt = scion(LOCAL, "1-ff00:0:100", 1, &p, 31055);
    let o = run1(
        frame("192.0.2.101:50000", "192.0.2.1:50001", &pkt),
        "inbound",
    );
    assert_eq!(o.sent.len(), 1, "{:?}", o.handlers);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("10.0.0.1:30042", "10.1.0.7:31055")
    );
    assert_eq!(out, pkt);
    assert_eq!(o.h("internal_out_packets"), "1");
}

fn assert_scmp(out: &[u8], t: u8, code: u8, pointer: u16) {
    let hp = header::Packet::new_checked(out).unwrap();
    assert_eq!(hp.next_hdr(), 202);
    assert_eq!(hp.src_ia().to_string(), LOCAL);
    let l4 = &out[hp.header_len()..];
    assert!(
        linerate_wire::scion::udp::verify(&hp, 202, l4),
        "SCMP checksum"
    );
    let m = scmp::Repr::parse(&scmp::Packet::new_checked(l4).unwrap()).unwrap();
    let want = if t == 4 {
        scmp::Message::ParameterProblem { code, pointer }
    } else {
        scmp::Message::DestinationUnreachable { code }
    };
    assert_eq!(m.message, want);
}

#[test]
fn scmp_errors_with_codes_and_pointers() {
    let s = up_seg();
    let good = |src: &str| {
        scion(
            "1-ff00:0:100",
            src,
            1,
            &path(&[(&s, s.betas[2])], 0, 1),
            5000,
        )
    };
    let from2 = |pkt: &[u8]| frame("192.0.2.102:50000", "192.0.2.2:50002", pkt);
    let hop1 = 36 + 4 + 8 + 12;
    // PP 52: expired (timestamp a day earlier).
    let mut p = good("1-ff00:0:111");
    p[44..48].copy_from_slice(&(TS - 90_000).to_be_bytes());
    let o = run1(from2(&p), "pp52");
    assert_eq!(o.ports, ["hop[1]"]);
    let (src, dst, out) = unframe(&o.sent[0]);
    assert_eq!(
        (src.as_str(), dst.as_str()),
        ("192.0.2.2:50002", "192.0.2.102:50000")
    );
    assert_scmp(&out, 4, 52, hop1 as u16);
    assert_eq!(o.h("scmp_52"), "1");
    // The reply goes back along the reversed path to 1-ff00:0:111.
    let hp = header::Packet::new_checked(&out[..]).unwrap();
    assert_eq!(hp.dst_ia().to_string(), "1-ff00:0:111");
    assert_eq!(
        meta_of(&out),
        Meta {
            curr_inf: 0,
            curr_hf: 2,
            seg_len: [3, 0, 0]
        }
    );
    // PP 51: bad MAC (the quote carries the ConsDir=0 SegID already updated).
    let mut p = good("1-ff00:0:111");
    p[hop1 + 11] ^= 1;
    let o = run1(from2(&p), "pp51");
    assert_eq!(o.ports, ["mac[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 51, hop1 as u16);
    // PP 50: arrived on IF 2 but the hop says travel-ingress is 2 only for IF 2; use IF 1.
    let p = good("1-ff00:0:111");
    let o = run1(frame("192.0.2.101:50000", "192.0.2.1:50001", &p), "pp50");
    assert_eq!(o.ports, ["hop[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 50, hop1 as u16);
    // PP 19: PayloadLen one too large.
    let mut p = good("1-ff00:0:111");
    p[7] += 1;
    let o = run1(from2(&p), "pp19");
    assert_eq!(o.ports, ["hop[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 19, 0);
    // PP 33: SrcIA local on an external link.
    let o = run1(from2(&good(LOCAL)), "pp33");
    assert_eq!(o.ports, ["hop[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 33, 20);
    // PP 34: DstIA local but not the last hop.
    let p = scion(
        LOCAL,
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[2])], 0, 1),
        5000,
    );
    let o = run1(from2(&p), "pp34");
    assert_eq!(o.ports, ["hop[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 34, 12);
    // PP 48: child -> child without crossover (egress 3 in the same segment).
    let bad = seg(false, 0x1234, vec![h(0, 7), h(3, 2), h(9, 0)]);
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&bad, bad.betas[2])], 0, 1),
        5000,
    );
    let o = run1(from2(&p), "pp48");
    assert_eq!(o.ports, ["egress[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 48, hop1 as u16);
    // PP 53: crossover child -> parent.
    let up = seg(false, 0x0101, vec![h(0, 2), h(9, 0)]);
    let down = seg(true, 0x0202, vec![h(0, 1), h(8, 0)]);
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&up, up.betas[1]), (&down, down.betas[0])], 0, 1),
        5000,
    );
    let o = run1(from2(&p), "pp53");
    assert_eq!(o.ports, ["route[1]", "egress[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 53, 36 + 4 + 8);
    // PP 49 (ConsDir=1): unknown egress interface 77... is PP 50 for ConsDir=1;
    // ConsDir=0 with an unknown egress is PP 49.
    let bad = seg(false, 0x1234, vec![h(0, 7), h(77, 2), h(9, 0)]);
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&bad, bad.betas[2])], 0, 1),
        5000,
    );
    let o = run1(from2(&p), "pp49");
    assert_eq!(o.ports, ["egress[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 49, hop1 as u16);
    // An SVC destination (wildcard) is delivered to the control service.
    let s2 = seg(true, 9, vec![h(0, 7), h(1, 0)]);
    let pb = path(&[(&s2, s2.betas[1])], 0, 1);
    let mut p = scion(LOCAL, "1-ff00:0:100", 1, &pb, 5000);
    p[9] = 0x40;
    p[28..32].copy_from_slice(&[0x00, 0x10, 0, 0]);
    let hp_len = 12 + 24 + pb.len();
    p[hp_len + 6..hp_len + 8].fill(0);
    let c = linerate_wire::scion::udp::checksum(
        &header::Packet::new_checked(&p[..]).unwrap(),
        17,
        &p[hp_len..],
        6,
    );
    p[hp_len + 6..hp_len + 8].copy_from_slice(&c.to_be_bytes());
    let o = run1(frame("192.0.2.101:50000", "192.0.2.1:50001", &p), "svc");
    assert_eq!(o.ports, ["route[2]"]);
    // SVC wildcard resolves to the control service (DS falls back to CS).
    let (_, dst, _) = unframe(&o.sent[0]);
    assert_eq!(dst, "10.0.0.10:31000");
    // DestinationUnreachable: an SVC value without instances (0x0003).
    p[28..30].copy_from_slice(&[0x00, 0x03]);
    let o = run1(
        frame("192.0.2.101:50000", "192.0.2.1:50001", &p),
        "svc-none",
    );
    assert_eq!(o.ports, ["route[2]", "deliver[1]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 1, 0, 0);
    assert_eq!(o.h("scmp_unreachable"), "1");
}

#[test]
fn slow_path_and_drops() {
    let mut s = up_seg();
    // Ingress router alert on our hop (ConsDir=0 => E flag).
    s.hops[1].flags = 0x01;
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[2])], 0, 1),
        5000,
    );
    let f = frame("192.0.2.102:50000", "192.0.2.2:50002", &p);
    let o = run1(f.clone(), "alert");
    assert_eq!(o.ports, ["route[4]"]);
    assert_eq!(o.slow, vec![f]);
    assert_eq!(o.h("slow_path"), "1");
    // Unknown underlay, garbage, empty path data.
    let junk = frame("192.0.2.102:50000", "192.0.2.2:50002", &[1, 2, 3]);
    let other = frame("192.0.2.99:1", "192.0.2.2:50002", &p);
    let mut empty = scion("1-ff00:0:100", "1-ff00:0:111", 0, &[], 5000);
    empty[5] = 9;
    let e = frame("192.0.2.102:50000", "192.0.2.2:50002", &empty);
    let frames = [junk, other, e, vec![0; 10]];
    let o = run(&frames, "fast", "drops");
    let steps = run(&frames, "steps", "drops");
    assert_eq!((&steps.dropped, &steps.handlers), (&o.dropped, &o.handlers));
    assert_eq!(steps.ports, ["parse[3]"]);
    assert_eq!(o.dropped.len(), 4);
    assert_eq!(
        (
            o.h("drops_malformed"),
            o.h("drops_unknown_link"),
            o.h("drops_path_type"),
            o.h("drops_underlay")
        ),
        ("1", "1", "1", "1")
    );
}

#[test]
fn one_hop_paths() {
    // Outbound: FirstHop egress 1 towards 1-ff00:0:100.
    let first = mac_input(0x5555, TS, 63, 0, 1);
    let m = cmac_reference(&key(), &first);
    let mut p = vec![0x01, 0, 0x55, 0x55];
    p.extend_from_slice(&TS.to_be_bytes());
    p.extend_from_slice(&[0, 63, 0, 0, 0, 1]);
    p.extend_from_slice(&m[..6]);
    p.extend_from_slice(&[0; 12]);
    let pkt = scion("1-ff00:0:100", LOCAL, 2, &p, 5000);
    let o = run1(frame("10.2.0.9:31000", "10.0.0.1:30042", &pkt), "ohp-out");
    assert_eq!(o.ports, ["parse[1]"]);
    let (_, dst, out) = unframe(&o.sent[0]);
    assert_eq!(dst, "192.0.2.101:50000");
    assert_eq!(
        out[38..40],
        (0x5555 ^ u16::from_be_bytes([m[0], m[1]])).to_be_bytes()
    );
    // Inbound from the parent: SecondHop gets ConsIngress 1 and our MAC.
    let pkt = scion(LOCAL, "1-ff00:0:100", 2, &p, 5000);
    let o = run1(
        frame("192.0.2.101:50000", "192.0.2.1:50001", &pkt),
        "ohp-in",
    );
    let (_, dst, out) = unframe(&o.sent[0]);
    assert_eq!(dst, "10.1.0.7:5000");
    let m2 = cmac_reference(&key(), &mac_input(0x5555, TS, 63, 1, 0));
    assert_eq!(
        out[56..68],
        [[0u8, 63, 0, 1, 0, 0].as_slice(), &m2[..6]].concat()[..]
    );
    // Wrong neighbour: dropped.
    let pkt = scion(LOCAL, "1-ff00:0:999", 2, &p, 5000);
    let o = run1(
        frame("192.0.2.101:50000", "192.0.2.1:50001", &pkt),
        "ohp-bad",
    );
    assert_eq!(o.h("drops_one_hop"), "1");
    assert_eq!(o.ports, ["parse[1]", "onehop[1]"]);
}

fn valid_frames() -> Vec<Vec<u8>> {
    let s = up_seg();
    let d = seg(true, 0x4242, vec![h(0, 7), h(1, 2), h(9, 0)]);
    vec![
        frame(
            "192.0.2.102:50000",
            "192.0.2.2:50002",
            &scion(
                "1-ff00:0:100",
                "1-ff00:0:111",
                1,
                &path(&[(&s, s.betas[2])], 0, 1),
                5000,
            ),
        ),
        frame(
            "192.0.2.101:50000",
            "192.0.2.1:50001",
            &scion(
                "1-ff00:0:111",
                "1-ff00:0:100",
                1,
                &path(&[(&d, d.betas[1])], 0, 1),
                5000,
            ),
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Mutated and truncated frames: never a panic, and IMPL fast and IMPL
    /// reference agree on every output and handler.
    #[test]
    fn fast_equals_reference(muts in proptest::collection::vec((0usize..2, 14usize..200, any::<u8>(), 0usize..260), 1..12)) {
        let base = valid_frames();
        let mut frames = base.clone();
        for (which, pos, val, cut) in muts {
            let mut f = base[which].clone();
            if pos < f.len() { f[pos] = val; }
            if cut < f.len() && cut % 3 == 0 { f.truncate(cut); }
            frames.push(f);
        }
        let a = run(&frames, "fast", "prop");
        let b = run(&frames, "reference", "prop");
        prop_assert_eq!(a.sent, b.sent);
        prop_assert_eq!(a.slow, b.slow);
        prop_assert_eq!(a.dropped, b.dropped);
        prop_assert_eq!(a.handlers, b.handlers);
    }

    /// The same mutated frames through the step elements
    /// (`nfs/scion-br.click`) and `SCIONRouter`: the same frames on every
    /// output (in another order: each step pushes its own batch) and the
    /// same handler values.
    #[test]
    fn steps_equal_fused(muts in proptest::collection::vec((0usize..2, 14usize..200, any::<u8>(), 0usize..260), 1..12)) {
        let base = valid_frames();
        let mut frames = base.clone();
        for (which, pos, val, cut) in muts {
            let mut f = base[which].clone();
            if pos < f.len() { f[pos] = val; }
            if cut < f.len() && cut % 3 == 0 { f.truncate(cut); }
            frames.push(f);
        }
        let a = run(&frames, "fast", "prop-steps");
        let b = run(&frames, "steps", "prop-steps");
        // nfs/scion-br.click fused by the configuration pass: exactly the
        // fused router, frames in the same order.
        let c = run(&frames, "xform", "prop-steps");
        prop_assert_eq!(&a.sent, &c.sent);
        prop_assert_eq!(&a.slow, &c.slow);
        prop_assert_eq!(&a.dropped, &c.dropped);
        prop_assert_eq!(&a.handlers, &c.handlers);
        let sorted = |mut v: Vec<Vec<u8>>| { v.sort(); v };
        prop_assert_eq!(sorted(a.sent), sorted(b.sent));
        prop_assert_eq!(sorted(a.slow), sorted(b.slow));
        prop_assert_eq!(sorted(a.dropped), sorted(b.dropped));
        prop_assert_eq!(a.handlers, b.handlers);
    }
}

/// The configuration pass fuses the step graphs of nfs/scion-br.click and
/// nfs/scion-br-live.click into one SCIONRouter named like the
/// SCIONConfig, wired as the steps were, and leaves alone every graph that
/// differs from the pattern.
#[test]
fn step_graphs_fuse_only_when_complete() {
    use linerate_elements::scion::fuse::fuse;
    let reg = linerate_elements::registry();
    let parse = |text: &str| {
        let opts = linerate_lang::ParseOptions {
            vars: [
                ("CONFIG", "topo"),
                ("INPUT", "in.pcap"),
                ("OUTPUT", "out.pcap"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .to_vec(),
            catalog: &reg,
            clickpath: vec![],
        };
        linerate_lang::parse_str(text, "t.click", &opts).unwrap_or_else(|e| panic!("{e}"))
    };
    let wiring = |c: &linerate_lang::Config, e: usize| {
        let mut v: Vec<String> = c
            .connections
            .iter()
            .filter_map(|x| {
                let name = |i: usize| c.elements[i].name.as_str();
                (x.from == e)
                    .then(|| format!("[{}] -> {}", x.from_port, name(x.to)))
                    .or_else(|| (x.to == e).then(|| format!("{} ->", name(x.from))))
            })
            .collect();
        v.sort();
        v
    };
    for (file, input, sent, slow) in [
        ("scion-br.click", "FromDump@6", "out", "slow"),
        ("scion-br-live.click", "links", "links", "slow"),
    ] {
        let text = std::fs::read_to_string(nfs(file)).unwrap();
        let mut c = parse(&text);
        let n = c.elements.len();
        assert_eq!(fuse(&mut c).len(), 1, "{file}");
        assert_eq!(c.elements.len(), n - 10, "{file}");
        let br = c.element_index("br").unwrap();
        assert_eq!(c.elements[br].class, "SCIONRouter");
        assert!(c.elements[br].config.contains("CONFIG topo"));
        assert!(!c.elements.iter().any(|e| e.class.starts_with("SCION")
            && !matches!(e.class.as_str(), "SCIONRouter" | "SCIONLinks")));
        let mut want = vec![
            format!("[0] -> {sent}"),
            format!("[1] -> {slow}"),
            "[2] -> dropped".to_string(),
            format!("{input} ->"),
        ];
        want.sort();
        assert_eq!(wiring(&c, br), want, "{file}");
        // The fused configuration is a valid one (ports, processing).
        let flat = c.to_click();
        assert!(flat.contains("SCIONRouter"), "{flat}");
    }
    let text = std::fs::read_to_string(nfs("scion-br.click")).unwrap();
    for (what, from, to) in [
        (
            "an element between two steps",
            "-> mac :: SCIONVerifyHop(br)",
            "-> Counter -> mac :: SCIONVerifyHop(br)",
        ),
        (
            "a side output elsewhere",
            "hop[2] -> dropped;",
            "hop[2] -> Discard;",
        ),
        (
            "a second user of the SCIONConfig",
            "scmp :: SCIONSCMPError(br);",
            "scmp :: SCIONSCMPError(br); Idle -> SCIONParse(br) -> Discard;",
        ),
        (
            "a step fed from outside",
            "scmp :: SCIONSCMPError(br);",
            "scmp :: SCIONSCMPError(br); Idle -> [0]scmp;",
        ),
        (
            "a second SCIONConfig for one step",
            "-> hop :: SCIONCheckHop(br)",
            "-> hop :: SCIONCheckHop(br2)",
        ),
    ] {
        assert!(text.contains(from), "{what}");
        let mut c = parse(&text.replacen(from, to, 1));
        let before = c.to_click();
        assert!(fuse(&mut c).is_empty(), "{what}");
        assert_eq!(c.to_click(), before, "{what}");
    }
}

/// The live form on loopback: SCIONLinks opens the sockets of a loopback
/// topology, neighbours' sockets send a transit packet, a packet with a bad
/// MAC and a runt; the transit packet arrives at the parent from our
/// interface 1, the SCMP reply at the child from interface 2, and the
/// per-link handlers count it all.
#[test]
fn live_links_on_loopback() {
    use std::net::UdpSocket;
    use std::time::Duration;
    let base = 20_000 + (std::process::id() % 400) as u16 * 100 + 50;
    let a = |ip: &str, off: u16| format!("{ip}:{}", base + off);
    let (l1, r1, l2, r2) = (
        a("127.0.0.1", 1),
        a("127.0.0.101", 11),
        a("127.0.0.2", 2),
        a("127.0.0.102", 12),
    );
    let dir = scratch("live");
    let cfg = dir.join("live-config");
    std::fs::create_dir_all(cfg.join("keys")).unwrap();
    std::fs::write(cfg.join("keys/master0.key"), "c2Npb24tdmVjdG9ycy1rMA==\n").unwrap();
    std::fs::write(
        cfg.join("topology.json"),
        format!(
            r#"{{"isd_as": "1-ff00:0:110", "border_routers": {{"br1": {{
              "internal_addr": "{}", "interfaces": {{
              "1": {{"underlay": {{"local": "{l1}", "remote": "{r1}"}}, "isd_as": "1-ff00:0:100", "link_to": "parent"}},
              "2": {{"underlay": {{"local": "{l2}", "remote": "{r2}"}}, "isd_as": "1-ff00:0:111", "link_to": "child"}}}}}}}}}}"#,
            a("127.0.0.1", 0)
        ),
    )
    .unwrap();
    let text = format!(
        "links :: SCIONLinks(CONFIG {0}, BURST 8) -> br :: SCIONRouter(CONFIG {0}, NOW {NOW}) -> links;\n\
         br[1] -> Discard;",
        cfg.display()
    );
    // Sockets are bound when the router is built (initialize).
    let mut r = common::build(&text, RouterOptions::default()).unwrap();
    let h = r.handle();
    let parent = UdpSocket::bind(&r1).unwrap();
    let child = UdpSocket::bind(&r2).unwrap();
    for s in [&parent, &child] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    }
    let t = std::thread::spawn(move || {
        r.run();
        r
    });
    let s = up_seg();
    let good = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[2])], 0, 1),
        5000,
    );
    let mut bad = good.clone();
    bad[12 + 24 + 4 + 8 + 12 + 6] ^= 1; // a byte of hop field 1's MAC
    child.send_to(&good, &l2).unwrap();
    child.send_to(&bad, &l2).unwrap();
    child.send_to(&[1, 2, 3], &l2).unwrap();
    let mut buf = [0u8; 2048];
    let (n, from) = parent.recv_from(&mut buf).unwrap();
    assert_eq!(from.to_string(), l1);
    let out = buf[..n].to_vec();
    let mut expect = good.clone();
    expect[36..40].copy_from_slice(&meta_of(&out).to_word().to_be_bytes());
    expect[42..44].copy_from_slice(&s.betas[1].to_be_bytes());
    assert_eq!(meta_of(&out).curr_hf, 2);
    assert_eq!(out, expect);
    let (n, from) = child.recv_from(&mut buf).unwrap();
    assert_eq!(from.to_string(), l2);
    assert_scmp(&buf[..n], 4, 51, 12 + 24 + 4 + 8 + 12);
    // The runt is counted once the router has read all three.
    let read = |name: &str| h.call(name, None).unwrap().trim().to_string();
    for _ in 0..500 {
        if read("links.if2_rx_packets") == "3" && read("br.drops_malformed") == "1" {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(read("links.if2_rx_packets"), "3");
    assert_eq!(read("links.if2_rx_bytes"), (2 * good.len() + 3).to_string());
    assert_eq!(read("links.if1_tx_packets"), "1");
    assert_eq!(read("links.if1_tx_bytes"), good.len().to_string());
    assert_eq!(read("links.if2_tx_packets"), "1");
    assert_eq!(read("links.internal_rx_packets"), "0");
    assert_eq!(read("links.tx_unroutable"), "0");
    assert_eq!(read("br.drops_malformed"), "1");
    assert_eq!(read("br.scmp_51"), "1");
    assert_eq!(
        read("links.links"),
        format!("if1 {l1}\nif2 {l2}\ninternal {}", a("127.0.0.1", 0))
    );
    h.stop();
    let r = t.join().unwrap();
    drop(r);
    // The sockets are closed when the run ends: the addresses are free.
    UdpSocket::bind(&l2).unwrap();
}

/// Frames on the fast path's route (IPv4 links): transit both ways,
/// crossovers child -> core and core -> child with two MAC checks, and
/// transit to a sibling's interface.
fn fast_route_frames() -> Vec<Vec<u8>> {
    let mut v = valid_frames();
    let up = seg(false, 0x0101, vec![h(0, 2), h(9, 0)]);
    let core = seg(true, 0x0202, vec![h(0, 5), h(8, 0)]);
    let p = path(&[(&up, up.betas[1]), (&core, core.betas[0])], 0, 1);
    let pkt = scion("1-ff00:0:130", "1-ff00:0:111", 1, &p, 5000);
    v.push(frame("192.0.2.102:50000", "192.0.2.2:50002", &pkt));
    let core = seg(false, 0x0303, vec![h(0, 5), h(8, 0)]);
    let down = seg(true, 0x0404, vec![h(0, 2), h(9, 0)]);
    let p = path(&[(&core, core.betas[1]), (&down, down.betas[0])], 0, 1);
    let pkt = scion("1-ff00:0:111", "1-ff00:0:130", 1, &p, 5000);
    v.push(frame("192.0.2.105:50000", "192.0.2.5:50005", &pkt));
    let s = seg(false, 0x5151, vec![h(0, 5), h(6, 2), h(9, 0)]);
    let p = path(&[(&s, s.betas[2])], 0, 1);
    let pkt = scion("1-ff00:0:101", "1-ff00:0:111", 1, &p, 5000);
    v.push(frame("192.0.2.102:50000", "192.0.2.2:50002", &pkt));
    v
}

#[test]
fn fast_route_frames_are_forwarded() {
    let frames = fast_route_frames();
    let o = run(&frames, "fast", "fast-route");
    assert_eq!(o.sent.len(), frames.len(), "{:?}", o.handlers);
    let dsts: Vec<String> = o.sent.iter().map(|f| unframe(f).1).collect();
    assert_eq!(
        dsts,
        [
            "192.0.2.101:50000",
            "192.0.2.102:50000",
            "192.0.2.105:50000",
            "192.0.2.102:50000",
            "10.0.0.2:30042"
        ]
    );
    assert_eq!(o.h("if6_out_packets"), "1");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The fast path's route (crossovers and siblings included), mutated
    /// byte by byte, truncated, padded after the UDP datagram: IMPL fast
    /// and IMPL reference agree on every output and handler.
    #[test]
    fn fast_route_equals_reference(muts in proptest::collection::vec((0usize..5, 14usize..200, any::<u8>(), 0usize..260), 1..16)) {
        let base = fast_route_frames();
        let mut frames = base.clone();
        for (which, pos, val, cut) in muts {
            let mut f = base[which].clone();
            if pos < f.len() { f[pos] = val; }
            match cut % 3 {
                0 if cut < f.len() => f.truncate(cut),
                1 => {
                    // Padding after the datagram, counted in the IPv4 length.
                    f.extend_from_slice(&[0xee; 6]);
                    let tl = u16::from_be_bytes([f[16], f[17]]).wrapping_add(6);
                    f[16..18].copy_from_slice(&tl.to_be_bytes());
                }
                _ => {}
            }
            frames.push(f);
        }
        let a = run(&frames, "fast", "prop-fast");
        let b = run(&frames, "reference", "prop-fast");
        prop_assert_eq!(a.sent, b.sent);
        prop_assert_eq!(a.slow, b.slow);
        prop_assert_eq!(a.dropped, b.dropped);
        prop_assert_eq!(a.handlers, b.handlers);
    }
}

/// A step element fed frames that `SCIONParse` never annotated drops them
/// as malformed (counted), never panics and never sends them on.
#[test]
fn steps_without_parse_drop_as_malformed() {
    let frames = valid_frames();
    let dir = scratch("unparsed");
    let inp = dir.join("unparsed-in.pcap");
    write_pcap(&inp, &frames);
    for class in [
        "SCIONCheckHop",
        "SCIONVerifyHop",
        "SCIONRoute",
        "SCIONCheckEgress",
        "SCIONAdvancePath",
        "SCIONEgress",
        "SCIONDeliver",
        "SCIONOneHop",
        "SCIONSCMPError",
    ] {
        let out = dir.join(format!("unparsed-{class}.pcap"));
        let text = format!(
            "br :: SCIONConfig(CONFIG {}, NOW {NOW});\n\
             FromDump({}, STOP true) -> {class}(br) -> ToDump({});",
            dir.display(),
            inp.display(),
            out.display()
        );
        let r = common::run(&text, RouterOptions::default());
        let n = r.handle().call("br.drops_malformed", None).unwrap();
        assert_eq!(n.trim(), frames.len().to_string(), "{class}");
        drop(r);
        assert!(records(&out).is_empty(), "{class}");
    }
}

/// The step side outputs the other tests do not reach, each with the same
/// result as `SCIONRouter` (`run1`): an egress router alert, a transit
/// packet from a host, the last hop forwarded by a sibling router, an
/// expired hop after a crossover, and an SCMP error about an SCMP error.
#[test]
fn step_ports_of_the_remaining_cases() {
    let from2 = |pkt: &[u8]| frame("192.0.2.102:50000", "192.0.2.2:50002", pkt);
    // Egress alert on our hop (ConsDir=0: the I flag): slow path.
    let mut s = up_seg();
    s.hops[1].flags = 0x02;
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[2])], 0, 1),
        5000,
    );
    let o = run1(from2(&p), "egress-alert");
    assert_eq!(o.ports, ["egress[2]"]);
    assert_eq!(o.h("slow_path"), "1");
    // Transit from a host on the internal network: step 6 drops it.
    let s = up_seg();
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[2])], 0, 1),
        5000,
    );
    let o = run1(
        frame("10.2.0.9:31000", "10.0.0.1:30042", &p),
        "host-transit",
    );
    assert_eq!(o.ports, ["hop[2]"]);
    assert_eq!(o.h("drops_transit_source"), "1");
    // br2 hands us the last hop field (in on its IF 6, out on our IF 1):
    // nothing left to advance to.
    let s = seg(true, 0x6161, vec![h(0, 5), h(6, 1)]);
    let p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[1])], 0, 1),
        5000,
    );
    let o = run1(frame("10.0.0.2:30042", "10.0.0.1:30042", &p), "last-hop");
    assert_eq!(o.ports, ["advance[1]"]);
    assert_eq!(o.h("drops_undeliverable"), "1");
    // A crossover whose next segment has expired: PP 52 at that hop.
    let up = seg(false, 0x0101, vec![h(0, 2), h(9, 0)]);
    let down = seg(true, 0x0202, vec![h(0, 3), h(8, 0)]);
    let mut p = scion(
        "1-ff00:0:112",
        "1-ff00:0:111",
        1,
        &path(&[(&up, up.betas[1]), (&down, down.betas[0])], 0, 1),
        5000,
    );
    p[52..56].copy_from_slice(&(TS - 90_000).to_be_bytes());
    let o = run1(from2(&p), "xover-expired");
    assert_eq!(o.ports, ["route[3]"]);
    let (_, _, out) = unframe(&o.sent[0]);
    assert_scmp(&out, 4, 52, 36 + 4 + 16 + 24);
    // An expired SCMP error message gets no SCMP error back.
    let s = up_seg();
    let mut p = scion(
        "1-ff00:0:100",
        "1-ff00:0:111",
        1,
        &path(&[(&s, s.betas[2])], 0, 1),
        5000,
    );
    p[4] = 202;
    p[12 + 24 + 4 + 8 + 36] = 1;
    p[44..48].copy_from_slice(&(TS - 90_000).to_be_bytes());
    let o = run1(from2(&p), "scmp-of-scmp");
    assert_eq!(o.ports, ["hop[1]", "scmp[1]"]);
    assert_eq!(o.h("drops_no_scmp"), "1");
    assert!(o.sent.is_empty());
}
