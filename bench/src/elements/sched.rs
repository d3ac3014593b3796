//! Cases for the scheduling elements: SRPrioQueue (behind an Unqueue, so
//! the runner's push graph enqueues and dequeues every packet), RateLimiter
//! and RSS.

use super::{traffic, Case, Goal};
use std::path::Path;

/// A well-mixed 32-bit value of `i` (splitmix64's finaliser).
fn mix(i: u64) -> u32 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// IPv4/UDP frames whose first payload word (offset 42) is a random
/// priority; with `levels`, one of that many values (pFabric-like ties).
fn prio_frames(len: usize, levels: Option<u32>) -> Vec<Vec<u8>> {
    let mut v = traffic::udp4(1024, len.max(46));
    for (i, f) in v.iter_mut().enumerate() {
        let r = mix(i as u64);
        let p = levels.map_or(r, |l| r % l);
        f[42..46].copy_from_slice(&p.to_be_bytes());
    }
    v
}

/// Ethernet/IPv6/UDP frames, each its own 5-tuple.
fn udp6(n: usize, len: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut f = vec![0u8; len.max(62)];
            f[0..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            let pl = (f.len() - 54) as u16;
            let ip = &mut f[14..54];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&pl.to_be_bytes());
            ip[6] = 17;
            ip[7] = 64;
            ip[8..10].copy_from_slice(&[0x20, 0x01]);
            ip[20..24].copy_from_slice(&mix(i as u64).to_be_bytes());
            ip[24..26].copy_from_slice(&[0x20, 0x01]);
            ip[36..40].copy_from_slice(&mix(i as u64 + 7777).to_be_bytes());
            let udp = &mut f[54..62];
            udp[0..2].copy_from_slice(&((1024 + i % 60000) as u16).to_be_bytes());
            udp[2..4].copy_from_slice(&((5000 + i % 1000) as u16).to_be_bytes());
            udp[4..6].copy_from_slice(&pl.to_be_bytes());
            f
        })
        .collect()
}

fn queue_case(cap: u32, what: &str, levels: Option<u32>, goal: Option<Goal>) -> Case {
    let q = |imp: &str| {
        format!(
            "elementclass SRPQ{cap}{imp} {{ input -> SRPrioQueue({cap}, OFFSET 42, LENGTH 4, IMPL {imp}) -> Unqueue -> output }}\n"
        )
    };
    Case {
        reference: Some(format!("SRPQ{cap}reference")),
        prelude: q("fast") + &q("reference"),
        goal,
        ..Case::header(
            "SRPrioQueue",
            format!("SRPQ{cap}fast"),
            what.to_string(),
            move |s| prio_frames(s, levels),
        )
    }
}

fn rated(config: &str, what: &str) -> Case {
    let reference = config.replacen(')', ", IMPL reference)", 1);
    Case {
        reference: Some(reference),
        goal: Some(Goal::Mpps(150.0)),
        ..Case::header("RateLimiter", config, what, |s| traffic::udp4(1024, s))
    }
}

/// 1024 class buckets over 1024 flows: the class is L4Parser's flow hash
/// (`MemoryReplay` sets no annotation a class could come from).
fn classes() -> Case {
    let rl = |imp: &str| {
        format!(
            "elementclass RL1024{imp} {{ input -> L4Parser -> RateLimiter(100Gbps, HASH true, CLASSES 1024, IMPL {imp}) -> output }}\n"
        )
    };
    Case {
        reference: Some("RL1024reference".into()),
        prelude: rl("fast") + &rl("reference"),
        goal: Some(Goal::Mpps(150.0)),
        ..Case::header(
            "RateLimiter",
            "RL1024fast",
            "1024 class buckets by flow hash, bits/s (with L4Parser)",
            |s| traffic::udp4(1024, s),
        )
    }
}

fn rss(what: &str, frames: impl Fn(usize) -> Vec<Vec<u8>> + 'static) -> Case {
    Case {
        reference: Some("RSS(IMPL reference)".into()),
        outputs: 4,
        ..Case::header("RSS", "RSS", what, frames)
    }
}

pub fn cases(_dir: &Path) -> Vec<Case> {
    vec![
        queue_case(
            32,
            "32 packets, random priorities, 64-packet bursts: half overflow",
            None,
            Some(Goal::Mpps(100.0)),
        ),
        queue_case(32, "32 packets, 8 priority levels (ties)", Some(8), None),
        queue_case(64, "64 packets: no overflow", None, None),
        rated("RateLimiter(1Gpps)", "one bucket, packets/s, all conform"),
        rated(
            "RateLimiter(10Gbps)",
            "one bucket, bits/s, part conform (excess dropped)",
        ),
        // The next row's parser on the same traffic, to subtract from it
        // (as MarkIPHeader's row is for MicroflowTable).
        Case::header(
            "L4Parser",
            "L4Parser",
            "parser alone (subtract from RateLimiter's 1024 classes)",
            |s| traffic::udp4(1024, s),
        ),
        classes(),
        rss("IPv4/UDP 4-tuple over 4 outputs", |s| {
            traffic::udp4(1024, s)
        }),
        rss("IPv6/UDP 4-tuple over 4 outputs", |s| udp6(1024, s)),
    ]
}
