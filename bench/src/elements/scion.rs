//! SCIONRouter cases: transit (one hop-field MAC check) and crossover (two)
//! at about 150 and 1500 bytes, on a topology written into the scratch
//! directory; the same traffic through the router built from step elements
//! (`SCIONParse` ... `SCIONEgress`, as in `nfs/scion-br.click`).

use super::{Case, Goal};
use linerate_elements::scion::mac::{derive_key, mac_input, HopMac};
use std::path::Path;

const TS: u32 = 1_700_000_000;
const MASTER: &[u8] = b"scion-vectors-k0";
const TOPO: &str = r#"{"isd_as": "1-ff00:0:110", "border_routers": {"br1": {
  "internal_addr": "10.0.0.1:30042", "interfaces": {
  "1": {"underlay": {"local": "192.0.2.1:50001", "remote": "192.0.2.101:50000"}, "isd_as": "1-ff00:0:100", "link_to": "parent"},
  "2": {"underlay": {"local": "192.0.2.2:50002", "remote": "192.0.2.102:50000"}, "isd_as": "1-ff00:0:111", "link_to": "child"},
  "3": {"underlay": {"local": "192.0.2.3:50003", "remote": "192.0.2.103:50000"}, "isd_as": "1-ff00:0:112", "link_to": "child"}}}}}"#;

fn sum(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Hop fields of a segment in construction order and the SegID
/// accumulators (`betas[k]` for hop k).
fn segment(m: &HopMac, beta0: u16, hops: &[(u16, u16)]) -> (Vec<[u8; 12]>, Vec<u16>) {
    let mut betas = vec![beta0];
    let mut out = Vec::new();
    for &(i, e) in hops {
        let b = *betas.last().unwrap_or(&0);
        let mac = m.cmac(&mac_input(b, TS, 63, i, e));
        let mut h = [0u8; 12];
        h[1] = 63;
        h[2..4].copy_from_slice(&i.to_be_bytes());
        h[4..6].copy_from_slice(&e.to_be_bytes());
        h[6..].copy_from_slice(&mac[..6]);
        out.push(h);
        betas.push(b ^ u16::from_be_bytes([mac[0], mac[1]]));
    }
    (out, betas)
}

/// An Ethernet/IPv4/UDP frame of `len` bytes from the child link (IF 2)
/// carrying SCION with `path` (meta, infos and hops already encoded).
fn frame(len: usize, flow: u32, path: &[u8]) -> Vec<u8> {
    let hdr = 12 + 24 + path.len();
    let scion_len = len.saturating_sub(42).max(hdr + 8);
    let mut s = vec![0u8; scion_len];
    s[..4].copy_from_slice(&(0xb8 << 20 | (flow & 0xf_ffff)).to_be_bytes());
    s[4] = 17;
    s[5] = (hdr / 4) as u8;
    s[6..8].copy_from_slice(&((scion_len - hdr) as u16).to_be_bytes());
    s[8] = 1;
    s[12..20].copy_from_slice(&0x0001_ff00_0000_0112u64.to_be_bytes());
    s[20..28].copy_from_slice(&0x0001_ff00_0000_0111u64.to_be_bytes());
    s[28..36].copy_from_slice(&[10, 1, 0, 7, 10, 2, 0, 9]);
    s[36..hdr].copy_from_slice(path);
    let l4 = scion_len - hdr;
    s[hdr..hdr + 8].copy_from_slice(&[0x9c, 0x40, 0x13, 0x88, (l4 >> 8) as u8, l4 as u8, 0, 0]);
    let ulen = (scion_len + 8) as u16;
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0, 0x45, 0];
    f.extend_from_slice(&(20 + ulen).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 192, 0, 2, 102, 192, 0, 2, 2]);
    let c = !fold(sum(&f[14..34]));
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let mut u = vec![0xc3, 0x50, 0xc3, 0x52];
    u.extend_from_slice(&ulen.to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(&s);
    let pseudo = sum(&[192, 0, 2, 102, 192, 0, 2, 2]) + 17 + u32::from(ulen);
    let c = !fold(pseudo + sum(&u));
    u[6..8].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&u);
    f
}

fn path(meta: u32, infos: &[(u8, u16)], hops: &[[u8; 12]]) -> Vec<u8> {
    let mut p = meta.to_be_bytes().to_vec();
    for &(flags, id) in infos {
        p.extend_from_slice(&[flags, 0]);
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&TS.to_be_bytes());
    }
    for h in hops {
        p.extend_from_slice(h);
    }
    p
}

/// Transit child (IF 2) -> parent (IF 1) on an up segment (ConsDir=0).
fn transit(len: usize) -> Vec<Vec<u8>> {
    let m = HopMac::new(&derive_key(MASTER));
    (0..64u16)
        .map(|i| {
            let (h, b) = segment(&m, 0x1000 + i, &[(0, 7), (1, 2), (9, 0)]);
            let p = path(0x0100_3000, &[(0, b[2])], &[h[2], h[1], h[0]]);
            frame(len, u32::from(i), &p)
        })
        .collect()
}

/// Crossover child (IF 2) -> child (IF 3): up segment then down segment.
fn crossover(len: usize) -> Vec<Vec<u8>> {
    let m = HopMac::new(&derive_key(MASTER));
    (0..64u16)
        .map(|i| {
            let (u, ub) = segment(&m, 0x2000 + i, &[(0, 2), (9, 0)]);
            let (d, db) = segment(&m, 0x3000 + i, &[(0, 3), (8, 0)]);
            let p = path(
                0x0100_2080,
                &[(0, ub[1]), (1, db[0])],
                &[u[1], u[0], d[0], d[1]],
            );
            frame(len, u32::from(i), &p)
        })
        .collect()
}

pub fn cases(dir: &Path) -> Vec<Case> {
    let conf = dir.join("scion");
    let ok = std::fs::create_dir_all(conf.join("keys")).is_ok()
        && std::fs::write(conf.join("topology.json"), TOPO).is_ok()
        && std::fs::write(conf.join("keys/master0.key"), "c2Npb24tdmVjdG9ycy1rMA==\n").is_ok();
    if !ok {
        return Vec::new();
    }
    let cfg = |imp: &str| {
        format!(
            "SCIONRouter(CONFIG {}, NOW 1700000100, IMPL {imp})",
            conf.display()
        )
    };
    let mk = |what: &str, goal: f64, frames: fn(usize) -> Vec<Vec<u8>>| Case {
        element: "SCIONRouter",
        config: cfg("fast"),
        what: what.to_string(),
        reference: Some(cfg("reference")),
        prelude: String::new(),
        outputs: 1,
        sizes: vec![150, 1500],
        frames: Box::new(frames),
        per_byte: false,
        scale: 1.0,
        goal: Some(Goal::Mpps(goal)),
    };
    let steps = |what: &str, goal: f64, frames: fn(usize) -> Vec<Vec<u8>>| Case {
        element: "SCION steps",
        config: "SCIONSteps".to_string(),
        reference: None,
        prelude: format!(
            "br :: SCIONConfig(CONFIG {}, NOW 1700000100);\n\
             elementclass SCIONSteps {{ input -> SCIONParse(br) -> SCIONCheckHop(br) \
             -> mac :: SCIONVerifyHop(br) -> route :: SCIONRoute(br) \
             -> SCIONCheckEgress(br) -> SCIONAdvancePath(br) -> SCIONEgress(br) -> output; \
             route[1] -> mac; }}",
            conf.display()
        ),
        ..mk(what, goal, frames)
    };
    vec![
        mk("transit, 1 MAC check", 30.0, transit),
        mk("crossover, 2 MAC checks", 20.0, crossover),
        steps("transit, 1 MAC check", 30.0, transit),
        steps("crossover, 2 MAC checks", 20.0, crossover),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_elements::scion::core::{Dataplane, Verdict};
    use linerate_elements::scion::topology::Topology;

    /// Every benchmark frame is forwarded (not answered with SCMP).
    #[test]
    fn frames_are_forwarded() {
        let t = Topology::parse(TOPO, MASTER, None).unwrap();
        let dp = Dataplane::new(&t, 1_700_000_100_000_000_000).unwrap();
        for f in transit(150).iter().chain(&crossover(1500)) {
            let plan = dp.stage1(f);
            let macs: Vec<[u8; 16]> = plan.blocks[..usize::from(plan.nmacs)]
                .iter()
                .map(|b| dp.hop_mac().cmac(b))
                .collect();
            assert!(
                matches!(plan.decide(&macs).0, Verdict::Forward(_)),
                "{:?}",
                plan.decide(&macs)
            );
        }
    }
}
