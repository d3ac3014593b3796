//! Cases for the tunnel elements (`NVGREEncap`, `VXLANEncap`, `GTPUEncap`
//! and their decapsulators) on the parse cases' mixed traffic.

use super::parse::mix;
use super::{Case, Goal};
use std::path::Path;

const ARGS: &str = "10.0.0.1, 10.0.0.2, 5001, ETH_SRC 2:0:0:0:0:1, ETH_DST 2:0:0:0:0:2";

/// `inner` behind outer Ethernet, IPv4 and `tunnel` (the tunnel header
/// bytes, UDP included where there is one), protocol `proto`.
fn outer(inner: &[u8], proto: u8, tunnel: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + tunnel.len() + inner.len()) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(tunnel);
    f.extend_from_slice(inner);
    f
}

fn udp(len: usize, dport: u16) -> Vec<u8> {
    let mut u = vec![0xc0, 0x01, 0, 0, 0, 0, 0, 0];
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&((16 + len) as u16).to_be_bytes());
    u
}

fn nvgre(n: usize, len: usize) -> Vec<Vec<u8>> {
    let hdr = [0x20, 0x00, 0x65, 0x58, 0x00, 0x13, 0x89, 0x00];
    mix(n, len).iter().map(|f| outer(f, 47, &hdr)).collect()
}

fn vxlan(n: usize, len: usize) -> Vec<Vec<u8>> {
    mix(n, len)
        .iter()
        .map(|f| {
            let mut t = udp(f.len(), 4789);
            t.extend_from_slice(&[0x08, 0, 0, 0, 0x00, 0x13, 0x89, 0]);
            outer(f, 17, &t)
        })
        .collect()
}

fn gtpu(n: usize, len: usize) -> Vec<Vec<u8>> {
    untagged(n, len)
        .iter()
        .map(|f| {
            let ip = &f[14..];
            let mut t = udp(ip.len(), 2152);
            t.extend_from_slice(&[0x30, 0xff, 0, 0, 0, 0, 0x13, 0x89]);
            t[10..12].copy_from_slice(&(ip.len() as u16).to_be_bytes());
            outer(ip, 17, &t)
        })
        .collect()
}

/// Untagged frames only (GTP-U carries the IP packet after byte 14).
fn untagged(n: usize, len: usize) -> Vec<Vec<u8>> {
    mix(n * 2, len)
        .into_iter()
        .filter(|f| f[12] != 0x81)
        .take(n)
        .collect()
}

fn case(
    element: &'static str,
    args: &str,
    what: &str,
    frames: impl Fn(usize) -> Vec<Vec<u8>> + 'static,
) -> Case {
    let mut c = Case::header(element, format!("{element}({args})"), what, frames);
    c.reference = Some(format!("{element}({args}, IMPL reference)"));
    c
}

pub fn cases(_dir: &Path) -> Vec<Case> {
    let mut nv = case("NVGREEncap", ARGS, "IPv4 outer, mixed inner", |s| {
        mix(1024, s)
    });
    nv.goal = Some(Goal::Mpps(100.0));
    vec![
        nv,
        case("VXLANEncap", ARGS, "IPv4 outer, mixed inner", |s| {
            mix(1024, s)
        }),
        case(
            "VXLANEncap",
            "2001:db8::1, 2001:db8::2, 5001",
            "IPv6 outer (UDP checksum), mixed inner",
            |s| mix(1024, s),
        ),
        case("GTPUEncap", ARGS, "IPv4 outer, IPv4/IPv6 inner", |s| {
            untagged(1024, s)
        }),
        case("NVGREDecap", "5001", "IPv4 outer, mixed inner", |s| {
            nvgre(1024, s)
        }),
        case("VXLANDecap", "5001", "IPv4 outer, mixed inner", |s| {
            vxlan(1024, s)
        }),
        case("GTPUDecap", "5001", "IPv4 outer, IPv4/IPv6 inner", |s| {
            gtpu(1024, s)
        }),
    ]
}
