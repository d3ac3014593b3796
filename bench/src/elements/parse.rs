//! Cases for the parsing and rewriting elements (`L4Parser`, `IPChecksum`,
//! `Extractor`), and the mixed IPv4/IPv6/VLAN TCP/UDP traffic they run on.

use super::{Case, Goal};
use std::path::Path;

/// The Internet checksum sum of `b` (not inverted), folded to 16 bits.
fn sum16(b: &[u8], init: u32) -> u16 {
    let mut s = init;
    for c in b.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// One frame of the mix: Ethernet, an optional 802.1Q tag, IPv4 or IPv6,
/// TCP or UDP, at least `len` bytes (longer when the headers need it),
/// valid IPv4 header and transport checksums, flow `i`.
pub fn frame(i: u32, len: usize, v6: bool, tcp: bool, vlan: bool) -> Vec<u8> {
    let l2 = if vlan { 18 } else { 14 };
    let l3 = if v6 { 40 } else { 20 };
    let l4 = if tcp { 20 } else { 8 };
    let len = len.max(l2 + l3 + l4);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    let et: u16 = if v6 { 0x86dd } else { 0x0800 };
    if vlan {
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f[14..16].copy_from_slice(&((i % 4000) as u16 + 1).to_be_bytes());
    }
    f[l2 - 2..l2].copy_from_slice(&et.to_be_bytes());
    let proto = if tcp { 6 } else { 17 };
    let seg = len - l2 - l3;
    let src = 0x0a00_0000 | (i & 0x00ff_ffff);
    let dst = 0x0a80_0000 | (i.wrapping_mul(7) & 0x00ff_ffff);
    let pseudo;
    {
        let ip = &mut f[l2..l2 + l3];
        if v6 {
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&(seg as u16).to_be_bytes());
            ip[6] = proto;
            ip[7] = 64;
            ip[8..10].copy_from_slice(&[0x20, 0x01]);
            ip[20..24].copy_from_slice(&src.to_be_bytes());
            ip[24..26].copy_from_slice(&[0x20, 0x01]);
            ip[36..40].copy_from_slice(&dst.to_be_bytes());
            pseudo = u32::from(sum16(&ip[8..40], 0)) + seg as u32 + u32::from(proto);
        } else {
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&((len - l2) as u16).to_be_bytes());
            ip[4..6].copy_from_slice(&(i as u16).to_be_bytes());
            ip[8] = 64;
            ip[9] = proto;
            ip[12..16].copy_from_slice(&src.to_be_bytes());
            ip[16..20].copy_from_slice(&dst.to_be_bytes());
            let c = !sum16(ip, 0);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            pseudo = u32::from(sum16(&ip[12..20], 0)) + seg as u32 + u32::from(proto);
        }
    }
    let t = &mut f[l2 + l3..];
    t[0..2].copy_from_slice(&((1024 + i % 60000) as u16).to_be_bytes());
    t[2..4].copy_from_slice(&((80 + i % 1000) as u16).to_be_bytes());
    for (k, b) in t[l4..].iter_mut().enumerate() {
        *b = (i as usize + k) as u8;
    }
    let at = if tcp {
        t[4..8].copy_from_slice(&i.to_be_bytes());
        t[12] = 0x50;
        t[13] = 0x10;
        t[14..16].copy_from_slice(&[0xff, 0xff]);
        16
    } else {
        t[4..6].copy_from_slice(&(seg as u16).to_be_bytes());
        6
    };
    let mut c = !sum16(t, pseudo);
    if c == 0 && !tcp {
        c = 0xffff;
    }
    t[at..at + 2].copy_from_slice(&c.to_be_bytes());
    f
}

/// `n` frames cycling through the eight combinations of IPv4/IPv6,
/// TCP/UDP and untagged/802.1Q, each its own flow.
pub fn mix(n: usize, len: usize) -> Vec<Vec<u8>> {
    (0..n as u32)
        .map(|i| frame(i, len, i & 1 != 0, i & 2 != 0, i & 4 != 0))
        .collect()
}

pub fn cases(_dir: &Path) -> Vec<Case> {
    let mut l4 = Case::header(
        "L4Parser",
        "L4Parser",
        "IPv4/IPv6 x TCP/UDP x VLAN mix",
        |s| mix(1024, s),
    );
    l4.reference = Some("L4Parser(IMPL reference)".into());
    l4.goal = Some(Goal::Mpps(150.0));
    let mut l4v4 = Case::header("L4Parser", "L4Parser", "IPv4/UDP only", |s| mix4(1024, s));
    l4v4.reference = Some("L4Parser(IMPL reference)".into());
    let ck = |mode: &'static str, what: &str| {
        let mut c = Case::header(
            "IPChecksum",
            format!("IPChecksum(MODE {mode})"),
            what,
            |s| mix(256, s),
        );
        c.reference = Some(format!("IPChecksum(MODE {mode}, IMPL reference)"));
        c.sizes = vec![64, 1500];
        c.per_byte = true;
        c.scale = 0.2;
        c
    };
    let mut verify = ck("verify", "verify IPv4 header + TCP/UDP, mix");
    verify.goal = Some(Goal::Gbps(100.0));
    let mut ex = Case::header(
        "Extractor",
        "Extractor",
        "parse + 56-byte record, mix",
        |s| mix(1024, s),
    );
    ex.reference = Some("Extractor(IMPL reference)".into());
    vec![
        l4,
        l4v4,
        verify,
        ck("set", "set IPv4 header + TCP/UDP, mix"),
        ex,
    ]
}

/// `n` untagged IPv4/UDP frames.
fn mix4(n: usize, len: usize) -> Vec<Vec<u8>> {
    (0..n as u32)
        .map(|i| frame(i, len, false, false, false))
        .collect()
}
