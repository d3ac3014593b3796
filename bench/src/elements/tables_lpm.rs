//! Cases for the longest-prefix-match and ternary tables: LPM with
//! 1,000,000 random IPv4 prefixes and with 200,000 random IPv6 prefixes,
//! HashTCAM with 8,000 rules over 16 masks: with its exact-match cache
//! (4,096 flows, all cached), without it, and with 65,536 flows (flows far
//! beyond the cache, which then misses).
//!
//! Prefix lengths follow a BGP-like distribution. IPv4 (per cent): /24 60,
//! /23 10, /22 11.5, /21 5, /20 4.5, /19 2.5, /18 1.5, /17 1, /16 1.5,
//! /8-/15 0.5, and /25-/32 2 (absent from the real DFZ; here so that
//! DIR-24-8's second level is exercised). IPv6: /48 48, /32 12, /44 8,
//! /40 7, /45-/47 8, /33-/39 6, /29 4, /49-/64 5, /16-/28 2; addresses
//! uniform in 2000::/3. Destinations are random hosts inside random routes:
//! 65,536 distinct frames (the table working set is far larger than L2, so
//! the row measures memory latency) and 1,024 (cache-resident: the row
//! measures the lookup itself). Every route has one of four outputs; half
//! have a gateway.

use super::{Case, Goal};
use crate::rng::Rng;
use linerate_elements::tables::hashtcam::DEFAULT_CACHE;
use linerate_runtime::flow::map_v4;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

/// Pick from `(value range, weight)` pairs.
fn pick(rng: &mut Rng, table: &[(u8, u8, u32)]) -> u8 {
    let total: u32 = table.iter().map(|t| t.2).sum();
    let mut x = (rng.next_u64() % u64::from(total)) as u32;
    for &(lo, hi, w) in table {
        if x < w {
            return lo + (rng.next_u64() % u64::from(hi - lo + 1)) as u8;
        }
        x -= w;
    }
    table[0].0
}

const LEN4: &[(u8, u8, u32)] = &[
    (24, 24, 600),
    (23, 23, 100),
    (22, 22, 115),
    (21, 21, 50),
    (20, 20, 45),
    (19, 19, 25),
    (18, 18, 15),
    (17, 17, 10),
    (16, 16, 15),
    (8, 15, 5),
    (25, 32, 20),
];

const LEN6: &[(u8, u8, u32)] = &[
    (48, 48, 480),
    (32, 32, 120),
    (44, 44, 80),
    (40, 40, 70),
    (45, 47, 80),
    (33, 39, 60),
    (29, 29, 40),
    (49, 64, 50),
    (16, 28, 20),
];

const FRAMES: usize = 65536;
const OUTPUTS: usize = 4;

/// Write `n` random IPv4 routes to `path`; return destinations inside
/// random ones.
fn ipv4_table(path: &Path, n: usize) -> Vec<u32> {
    let mut rng = Rng(0x4c50_4d34);
    let mut text = String::with_capacity(n * 32);
    let mut routes = Vec::with_capacity(n);
    for i in 0..n {
        let len = pick(&mut rng, LEN4);
        let mask = u32::MAX << (32 - u32::from(len));
        let addr = rng.next_u64() as u32 & mask;
        let port = i % OUTPUTS;
        let a = std::net::Ipv4Addr::from(addr);
        if i % 2 == 0 {
            let _ = writeln!(text, "{a}/{len} 10.0.0.{} {port}", port + 1);
        } else {
            let _ = writeln!(text, "{a}/{len} {port}");
        }
        routes.push((addr, mask));
    }
    let _ = std::fs::write(path, text);
    (0..FRAMES)
        .map(|_| {
            let (a, m) = routes[(rng.next_u64() % n as u64) as usize];
            a | (rng.next_u64() as u32 & !m)
        })
        .collect()
}

/// Write `n` random IPv6 routes to `path`; return destinations inside
/// random ones.
fn ipv6_table(path: &Path, n: usize) -> Vec<u128> {
    let mut rng = Rng(0x4c50_4d36);
    let mut text = String::with_capacity(n * 48);
    let mut routes = Vec::with_capacity(n);
    for i in 0..n {
        let len = pick(&mut rng, LEN6);
        let mask = u128::MAX << (128 - u32::from(len));
        let r = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        let addr = ((r >> 3) | (1u128 << 125)) & mask;
        let port = i % OUTPUTS;
        let a = std::net::Ipv6Addr::from(addr);
        if i % 2 == 0 {
            let _ = writeln!(text, "{a}/{len} fe80::{} {port}", port + 1);
        } else {
            let _ = writeln!(text, "{a}/{len} {port}");
        }
        routes.push((addr, mask));
    }
    let _ = std::fs::write(path, text);
    (0..FRAMES)
        .map(|_| {
            let (a, m) = routes[(rng.next_u64() % n as u64) as usize];
            let r = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
            a | (r & !m)
        })
        .collect()
}

fn frames4(dsts: &[u32], len: usize) -> Vec<Vec<u8>> {
    dsts.iter()
        .enumerate()
        .map(|(i, d)| {
            let mut f = vec![0u8; len.max(42)];
            linerate_elements::model::memoryreplay::build_frame(i as u32, &mut f);
            f[30..34].copy_from_slice(&d.to_be_bytes());
            f
        })
        .collect()
}

fn frames6(dsts: &[u128], len: usize) -> Vec<Vec<u8>> {
    dsts.iter()
        .enumerate()
        .map(|(i, d)| {
            let mut f = vec![0u8; len.max(62)];
            f[0..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            f[14] = 0x60;
            let payload = (f.len() - 54) as u16;
            f[18..20].copy_from_slice(&payload.to_be_bytes());
            f[20] = 17;
            f[21] = 64;
            f[22..24].copy_from_slice(&[0x20, 0x01]);
            f[34..38].copy_from_slice(&(i as u32).to_be_bytes());
            f[38..54].copy_from_slice(&d.to_be_bytes());
            f[54..56].copy_from_slice(&((1024 + i % 60000) as u16).to_be_bytes());
            f[56..58].copy_from_slice(&5000u16.to_be_bytes());
            f
        })
        .collect()
}

/// The 16 HashTCAM masks: (source prefix, destination prefix, exact
/// source port, exact destination port, exact protocol), most specific
/// first. Mask `t` gets priorities `(15 - t) * 500 + [0, 1000)`, so bands
/// overlap by half (specific rules usually, not always, win).
const MASKS: [(u8, u8, bool, bool, bool); 16] = [
    (32, 32, true, true, true),
    (32, 32, false, true, true),
    (24, 32, false, true, true),
    (32, 24, false, true, true),
    (24, 24, false, true, true),
    (16, 32, false, true, true),
    (0, 32, false, true, true),
    (0, 24, false, true, true),
    (24, 24, false, false, true),
    (16, 16, false, true, true),
    (0, 16, false, true, true),
    (16, 16, false, false, true),
    (8, 8, false, true, true),
    (0, 8, false, true, false),
    (8, 0, false, false, true),
    (0, 0, false, true, true),
];

/// A 5-tuple (IPv4).
type Tuple = (u32, u32, u16, u16, u8);

/// Write 8,000 rules (500 per mask) to `path`; return the rules' text
/// and `flows` tuples, 90 % inside random rules and 10 % random.
fn tcam_rules(path: &Path, flows: usize) -> (Vec<String>, Vec<Tuple>) {
    let mut rng = Rng(0x5443_414d);
    let mut seen = HashSet::new();
    let mut rules = Vec::new();
    let mut specs = Vec::new();
    let m = |l: u8| u32::MAX.checked_shl(32 - u32::from(l)).unwrap_or(0);
    for (t, &(sl, dl, sp, dp, pr)) in MASKS.iter().enumerate() {
        let mut n = 0;
        while n < 500 {
            let src = (0x0a00_0000 | (rng.next_u64() as u32 & 0x00ff_ffff)) & m(sl);
            let dst = (0x1400_0000 | (rng.next_u64() as u32 & 0x00ff_ffff)) & m(dl);
            let sport = (rng.next_u64() % 65535) as u16 + 1;
            let dport = (rng.next_u64() % 1024) as u16;
            let proto = if rng.next_u64().is_multiple_of(2) {
                6
            } else {
                17
            };
            let prio = (15 - t as u64) * 500 + rng.next_u64() % 1000;
            let mut r = format!("{prio} {}", rules.len() % OUTPUTS);
            if sl > 0 {
                let _ = write!(r, " src {}/{sl}", std::net::Ipv4Addr::from(src));
            }
            if dl > 0 {
                let _ = write!(r, " dst {}/{dl}", std::net::Ipv4Addr::from(dst));
            }
            if sp {
                let _ = write!(r, " sport {sport}");
            }
            if dp {
                let _ = write!(r, " dport {dport}");
            }
            if pr {
                let _ = write!(r, " proto {proto}");
            }
            // The output is not part of a rule's identity for uniqueness here.
            let id = r
                .split_once(' ')
                .map(|x| x.1.split_once(' ').map_or("", |y| y.1).to_string());
            if seen.insert((prio, id)) {
                rules.push(r);
                specs.push((src, m(sl), dst, m(dl), sp.then_some(sport), dport, proto));
                n += 1;
            }
        }
    }
    let _ = std::fs::write(path, rules.join("\n"));
    let tuples = (0..flows)
        .map(|_| {
            let x = rng.next_u64();
            if x.is_multiple_of(10) {
                return (
                    x as u32,
                    (x >> 32) as u32,
                    rng.next_u64() as u16,
                    rng.next_u64() as u16 % 1024,
                    6,
                );
            }
            let (s, sm, d, dm, sp, dp, pr) = specs[(rng.next_u64() % specs.len() as u64) as usize];
            let sport = sp.unwrap_or(rng.next_u64() as u16);
            (
                s | (rng.next_u64() as u32 & !sm),
                d | (rng.next_u64() as u32 & !dm),
                sport,
                dp,
                pr,
            )
        })
        .collect();
    (rules, tuples)
}

fn frames_tuples(tuples: &[Tuple], len: usize) -> Vec<Vec<u8>> {
    tuples
        .iter()
        .enumerate()
        .map(|(i, &(s, d, sp, dp, pr))| {
            let mut f = vec![0u8; len.max(42)];
            linerate_elements::model::memoryreplay::build_frame(i as u32, &mut f);
            f[23] = pr;
            f[26..30].copy_from_slice(&s.to_be_bytes());
            f[30..34].copy_from_slice(&d.to_be_bytes());
            f[34..36].copy_from_slice(&sp.to_be_bytes());
            f[36..38].copy_from_slice(&dp.to_be_bytes());
            f
        })
        .collect()
}

/// The cache hit rate, in per cent, of `HashTCAM`'s default cache over
/// `packets` packets of `tuples` round-robin (as the bench replays them).
fn tcam_hit_rate(rules: &[String], tuples: &[Tuple], packets: usize) -> f64 {
    use linerate_elements::tables::hashtcam::{Rule, Tcam};
    let mut t = Tcam::with_cache(false, DEFAULT_CACHE);
    for r in rules.iter().filter_map(|r| Rule::parse(r).ok()) {
        let _ = t.insert(r);
    }
    let keys: Vec<linerate_runtime::flow::FlowKey> = tuples
        .iter()
        .map(|&(s, d, sp, dp, pr)| linerate_runtime::flow::FlowKey {
            src: map_v4(s.to_be_bytes()),
            dst: map_v4(d.to_be_bytes()),
            sport: sp,
            dport: dp,
            proto: pr,
            version: 4,
        })
        .collect();
    for k in keys.iter().cycle().take(packets) {
        let _ = t.lookup(k);
    }
    let (hits, lookups) = t.cache_stats();
    hits as f64 * 100.0 / lookups.max(1) as f64
}

fn thread_cpu_ns() -> u64 {
    (linerate_model::calibrate::thread_cpu_seconds() * 1e9) as u64
}

/// Insert `rules` one by one into an empty table, timed on the thread's
/// CPU clock: mean, 99th percentile and maximum of one insert, in
/// microseconds.
fn insert_times(rules: &[String]) -> (f64, f64, f64) {
    use linerate_elements::tables::hashtcam::{Rule, Tcam};
    let parsed: Vec<Rule> = rules.iter().filter_map(|r| Rule::parse(r).ok()).collect();
    let mut t = Tcam::new(false);
    let mut us: Vec<f64> = parsed
        .into_iter()
        .map(|r| {
            let t0 = thread_cpu_ns();
            let _ = t.insert(r);
            (thread_cpu_ns() - t0) as f64 / 1e3
        })
        .collect();
    us.sort_by(|a, b| a.total_cmp(b));
    let n = us.len().max(1);
    let mean = us.iter().sum::<f64>() / n as f64;
    let p99 = us.get(n * 99 / 100).copied().unwrap_or(0.0);
    (mean, p99, us.last().copied().unwrap_or(0.0))
}

pub fn cases(dir: &Path) -> Vec<Case> {
    let f4 = dir.join("lpm-ipv4-1m.txt");
    let f6 = dir.join("lpm-ipv6-200k.txt");
    let d4 = ipv4_table(&f4, 1_000_000);
    let d6 = ipv6_table(&f6, 200_000);
    let lpm = |file: &Path, reference: bool| {
        format!(
            "LPM(FILE \"{}\", HEADER true, OFFSET 14{})",
            file.display(),
            if reference { ", IMPL reference" } else { "" }
        )
    };
    let mut v = Vec::new();
    for n in [FRAMES, 1024] {
        let d4: Vec<u32> = d4[..n].to_vec();
        let mut c = Case::header(
            "LPM",
            lpm(&f4, false),
            format!("IPv4, 1M BGP-like prefixes, {n} destinations"),
            move |s| frames4(&d4, s),
        );
        c.reference = Some(lpm(&f4, true));
        c.outputs = OUTPUTS;
        c.goal = Some(Goal::Mpps(150.0));
        v.push(c);
    }
    for n in [FRAMES, 1024] {
        let d6: Vec<u128> = d6[..n].to_vec();
        let mut c = Case::header(
            "LPM",
            lpm(&f6, false),
            format!("IPv6, 200K BGP-like prefixes, {n} destinations"),
            move |s| frames6(&d6, s),
        );
        c.reference = Some(lpm(&f6, true));
        c.outputs = OUTPUTS;
        c.goal = Some(Goal::Mpps(30.0));
        v.push(c);
    }
    let ft = dir.join("hashtcam-8000.txt");
    let (rules, tuples) = tcam_rules(&ft, 65536);
    let (mean, p99, max) = insert_times(&rules);
    let tcam = |extra: &str| format!("HashTCAM(FILE \"{}\", OFFSET 14{extra})", ft.display());
    // The goal row: 4,096 flows, all in the default cache once seen (2M
    // packets, so that filling it, 4,096 misses, weighs little). Then the
    // tables alone (and the reference, 8,000 rules scanned, on that row)
    // and flows far beyond the cache.
    let rows = [
        (4096, "", 0.4, false),
        (4096, ", CACHE 0", 0.04, true),
        (65536, "", 0.4, false),
    ];
    for (i, (flows, extra, scale, reference)) in rows.into_iter().enumerate() {
        let insert = if i == 0 {
            format!(" (insert CPU time: mean {mean:.2} us, p99 {p99:.1} us, max {max:.1} us)")
        } else {
            String::new()
        };
        let t: Vec<Tuple> = tuples[..flows].to_vec();
        let cache = if extra.is_empty() {
            let packets = (5_000_000.0 * scale) as usize;
            format!(
                "default cache ({DEFAULT_CACHE} lines, {:.1} % hits over {}M packets)",
                tcam_hit_rate(&rules, &t, packets),
                packets / 1_000_000
            )
        } else {
            "no cache".to_string()
        };
        let mut c = Case::header(
            "HashTCAM",
            tcam(extra),
            format!("8000 rules, 16 masks, {flows} flows, {cache}{insert}"),
            move |s| frames_tuples(&t, s),
        );
        if reference {
            c.reference = Some(tcam(", IMPL reference"));
        }
        c.outputs = OUTPUTS;
        c.goal = Some(Goal::Mpps(40.0));
        c.scale = scale;
        v.push(c);
    }
    v
}
