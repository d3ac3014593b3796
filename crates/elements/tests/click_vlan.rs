//! Click-style tests of VLANEncap and VLANDecap: literal frames, handlers, argument errors.

use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterOptions};
use std::path::{Path, PathBuf};

fn build(text: &str) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let o = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "ethernet.click", &o).map_err(|d| d.to_string())?;
    Router::build(&c, &reg, RouterOptions::default()).map_err(|d| d.to_string())
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim_end().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-ethernet-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
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

/// Run `FromDump(in) -> ELEMS -> ToDump(out)` on `frames`; return the router
/// (for handlers) and the frames written.
fn through(name: &str, elems: &str, frames: &[Vec<u8>]) -> (Router, Vec<Vec<u8>>) {
    let (i, o) = (
        tmp(&format!("{name}-in.pcap")),
        tmp(&format!("{name}-out.pcap")),
    );
    write_pcap(&i, frames);
    let mut r = build(&format!(
        "FromDump({}, STOP true) -> {elems} -> ToDump({}, SNAPLEN 65535);",
        i.display(),
        o.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    r.run();
    let out = records(&o);
    (r, out)
}

/// dst 00:11:22:33:44:55, src 66:77:88:99:aa:bb, IPv4, 4 payload bytes.
fn plain() -> Vec<u8> {
    vec![
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x08, 0x00, 0xde,
        0xad, 0xbe, 0xef,
    ]
}

/// The same frame tagged with TPID `tpid` and TCI `tci`.
fn tagged(tpid: [u8; 2], tci: [u8; 2]) -> Vec<u8> {
    vec![
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, tpid[0], tpid[1],
        tci[0], tci[1], 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef,
    ]
}

#[test]
fn encap_inserts_the_tag_after_the_addresses() {
    // VLAN 100, priority 3: TCI 0x6064.
    let (r, out) = through(
        "encap",
        "e :: VLANEncap(VLAN_ID 100, VLAN_PCP 3)",
        &[plain()],
    );
    assert_eq!(out, vec![tagged([0x81, 0x00], [0x60, 0x64])]);
    assert_eq!(read(&r, "e.config"), "VLAN_ID 100, VLAN_PCP 3");
    assert_eq!(read(&r, "e.vlan_tci"), "24676");
    assert_eq!(read(&r, "e.vlan_id"), "100");
    assert_eq!(read(&r, "e.vlan_pcp"), "3");
    assert_eq!(read(&r, "e.native_vlan"), "0");
    assert_eq!(read(&r, "e.ethertype"), "0x8100");
    r.handle().call("e.vlan_id", Some("5")).unwrap();
    assert_eq!(read(&r, "e.vlan_tci"), (0x6005).to_string());
    assert!(r.handle().call("e.vlan_id", Some("4096")).is_err());
    r.handle().call("e.vlan_pcp", Some("1")).unwrap();
    assert_eq!(read(&r, "e.vlan_tci"), (0x2005).to_string());
    r.handle().call("e.vlan_tci", Some("ANNO")).unwrap();
    assert_eq!(read(&r, "e.vlan_tci"), "ANNO");
}

#[test]
fn encap_positional_tci_ethertype_and_native_vlan() {
    // Positional VLAN_TCI 0x0123 with VLAN_PCP 7 ORed in; 802.1ad TPID.
    let (_, out) = through("tci", "VLANEncap(0x0123, 7, ETHERTYPE 0x88a8)", &[plain()]);
    assert_eq!(out, vec![tagged([0x88, 0xa8], [0xe1, 0x23])]);
    // The native VLAN passes untagged; NATIVE_VLAN -1 tags even VLAN 0.
    let (_, out) = through("native", "VLANEncap(VLAN_ID 7, NATIVE_VLAN 7)", &[plain()]);
    assert_eq!(out, vec![plain()]);
    let (_, out) = through("zero", "VLANEncap(VLAN_ID 0)", &[plain()]);
    assert_eq!(out, vec![plain()]);
    let (_, out) = through("always", "VLANEncap(VLAN_ID 0, NATIVE_VLAN -1)", &[plain()]);
    assert_eq!(out, vec![tagged([0x81, 0x00], [0, 0])]);
}

#[test]
fn encap_drops_frames_without_addresses() {
    let short = vec![1u8; 11];
    let (r, out) = through("short", "e :: VLANEncap(VLAN_ID 9)", &[short, plain()]);
    assert_eq!(out, vec![tagged([0x81, 0x00], [0x00, 0x09])]);
    assert_eq!(read(&r, "e.drops"), "1");
}

#[test]
fn encap_argument_errors() {
    for (conf, msg) in [
        ("VLANEncap(VLAN_ID 4096)", "VLAN_ID: out of range"),
        ("VLANEncap(VLAN_PCP 8)", "VLAN_PCP: out of range"),
        ("VLANEncap(0x10000)", "VLAN_TCI: out of range"),
        (
            "VLANEncap(VLAN_ID 1, NATIVE_VLAN -2)",
            "NATIVE_VLAN: out of range",
        ),
        ("VLANEncap(bogus)", "VLAN_TCI"),
    ] {
        let e = build(&format!("Idle -> {conf} -> Discard;")).err().unwrap();
        assert!(e.contains(msg), "{conf}: {e}");
    }
}

#[test]
fn encap_drops_short_frames_among_others_in_every_mode() {
    // Short frames between full ones, in one batch: passed over by the tag
    // loops (fixed tag, annotation) or the untagged native VLAN, dropped
    // and counted, the rest in order.
    let frames = [plain(), vec![1u8; 11], plain(), vec![2u8; 5], plain()];
    let tag9 = tagged([0x81, 0x00], [0x00, 0x09]);
    for (name, elems, want) in [
        ("short-fixed", "e :: VLANEncap(VLAN_ID 9)", tag9),
        // The annotation is 0 here: the native VLAN, so untagged.
        ("short-anno", "e :: VLANEncap(ANNO)", plain()),
        (
            "short-native",
            "e :: VLANEncap(VLAN_ID 7, NATIVE_VLAN 7)",
            plain(),
        ),
    ] {
        let (r, out) = through(name, elems, &frames);
        assert_eq!(out, vec![want; 3], "{elems}");
        assert_eq!(read(&r, "e.drops"), "2", "{elems}");
    }
}

#[test]
fn decap_strips_the_tag_and_encap_anno_restores_it() {
    let t = tagged([0x81, 0x00], [0xa0, 0x2a]);
    let (_, out) = through("decap", "VLANDecap", &[t.clone(), plain()]);
    assert_eq!(out, vec![plain(), plain()]);
    // The annotation carries the TCI from VLANDecap to VLANEncap(ANNO);
    // an untagged frame gets TCI 0, the native VLAN, and stays untagged.
    let (_, out) = through(
        "anno",
        "VLANDecap -> VLANEncap(ANNO)",
        &[t.clone(), plain()],
    );
    assert_eq!(out, vec![t.clone(), plain()]);
    // ANNO false leaves the annotation alone: VLANEncap(ANNO) then sees 0.
    let (_, out) = through("noanno", "VLANDecap(false) -> VLANEncap(ANNO)", &[t]);
    assert_eq!(out, vec![plain()]);
}

#[test]
fn decap_other_tpids_and_truncated_tags() {
    let qinq = tagged([0x88, 0xa8], [0x00, 0x05]);
    let (_, out) = through("other", "VLANDecap", std::slice::from_ref(&qinq));
    assert_eq!(out, vec![qinq.clone()]);
    let (_, out) = through("qinq", "VLANDecap(ETHERTYPE 0x88a8)", &[qinq]);
    assert_eq!(out, vec![plain()]);
    // 15 bytes with a tag protocol identifier: the tag is cut, dropped.
    let cut = tagged([0x81, 0x00], [0x00, 0x05])[..15].to_vec();
    let tiny = vec![7u8; 5];
    let (r, out) = through("cut", "d :: VLANDecap", &[cut, tiny.clone(), plain()]);
    assert_eq!(out, vec![tiny, plain()]);
    assert_eq!(read(&r, "d.drops"), "1");
}

#[test]
fn encap_tags_own_buffers_and_views_mixed_in_large_batches() {
    // 150 frames from each of two sources meet in one queue and leave it in
    // batches of up to 256: FromDump's packets are views of the trace (a tag
    // needs a copy first), MemoryReplay's copies are their own buffers
    // (tagged in place), and every 7th frame is too short. Every frame that
    // has its addresses comes out tagged, with its bytes intact, whichever
    // path it took and wherever in a chunk of 64 it sat.
    let frame = |src: u8, i: u8| -> Vec<u8> {
        if i % 7 == 3 {
            return vec![src, i, 0, 0, 0];
        }
        let mut f = plain();
        f[0] = src;
        f[1] = i;
        f[17] = i ^ 0x5a;
        f
    };
    let views: Vec<Vec<u8>> = (0..150).map(|i| frame(0xaa, i)).collect();
    let own: Vec<Vec<u8>> = (0..150).map(|i| frame(0xbb, i)).collect();
    let (vi, oi, out) = (
        tmp("mixed-views.pcap"),
        tmp("mixed-own.pcap"),
        tmp("mixed-out.pcap"),
    );
    write_pcap(&vi, &views);
    write_pcap(&oi, &own);
    let full = views.iter().chain(&own).filter(|f| f.len() >= 12).count();
    let mut r = build(&format!(
        "FromDump({}) -> q :: Queue(1024);
         MemoryReplay(FILE {}, COPY true, LIMIT 150) -> q;
         q -> Unqueue(BURST 256) -> e :: VLANEncap(VLAN_ID 9)
           -> Counter(COUNT_CALL {full} stop) -> ToDump({}, SNAPLEN 65535);",
        vi.display(),
        oi.display(),
        out.display()
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    r.run();
    let mut got = records(&out);
    got.sort();
    let mut want: Vec<Vec<u8>> = views
        .iter()
        .chain(&own)
        .filter(|f| f.len() >= 12)
        .map(|f| [&f[..12], &[0x81, 0x00, 0x00, 0x09], &f[12..]].concat())
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(read(&r, "e.drops"), (300 - full).to_string());
}
