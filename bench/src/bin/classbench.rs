//! IPFilter classifier benchmark: generates rule sets the way issue 3
//! describes and measures compile time and lookups per second.
//!
//! ```text
//! classbench [RULES...]          default: 1000 8000
//! classbench --print N           print the N generated rules (IPFilter arguments)
//! ```
//!
//! Rules: random `allow`/`deny`, mixing protocol (tcp, udp or any), source
//! and destination prefixes of lengths 0-32, exact destination ports and
//! port ranges written as comparisons (`dst port >= A && dst port <= B`);
//! half are derived from flows of the core benchmark trace (the 10,000
//! flows of `gentrace small`, regenerated here with the same seed), half are
//! random; a final `deny all`. Packets are the trace's first 2,000,000
//! packets (IPv4/UDP headers), looked up in-process. Each figure is the
//! median of 5 runs.

use linerate_elements::classification::compile::{compile_ip_rules, PacketView};
use std::time::Instant;

/// splitmix64, as in gentrace.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Flow {
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
}

const FLOWS: usize = 10_000;

/// The flows of gentrace's benchmark traces, and the flow index of each of
/// the first `n` packets.
fn trace(n: usize) -> (Vec<Flow>, Vec<usize>) {
    let mut rng = Rng(0x6c69_6e65_7261_7465);
    let flows: Vec<Flow> = (0..FLOWS)
        .map(|_| {
            let s = rng.next();
            let d = rng.next();
            Flow {
                src: [10, (s >> 8) as u8, (s >> 16) as u8, (s >> 24) as u8 | 1],
                dst: [192, 168, (d >> 8) as u8, (d >> 16) as u8 | 1],
                sport: 1024 + rng.below(64_000) as u16,
                dport: 1024 + rng.below(64_000) as u16,
            }
        })
        .collect();
    let pk = (0..n).map(|_| rng.below(FLOWS as u64) as usize).collect();
    (flows, pk)
}

fn prefix(a: [u8; 4], len: u64) -> String {
    let v = u32::from_be_bytes(a);
    let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let [x, y, z, w] = (v & m).to_be_bytes();
    format!("{x}.{y}.{z}.{w}/{len}")
}

/// `n` rules plus the final `deny all`.
fn rules(n: usize, flows: &[Flow]) -> Vec<String> {
    let mut rng = Rng(0x636c_6173_7362_656e); // "classben"
    let mut out = Vec::with_capacity(n + 1);
    for i in 0..n {
        let action = if rng.below(2) == 0 { "allow" } else { "deny" };
        let proto = ["tcp", "udp", ""][rng.below(3) as usize];
        let (src, dst, port) = if i % 2 == 0 {
            let f = &flows[rng.below(FLOWS as u64) as usize];
            (f.src, f.dst, f.dport)
        } else {
            (
                (rng.next() as u32).to_be_bytes(),
                (rng.next() as u32).to_be_bytes(),
                rng.below(65536) as u16,
            )
        };
        let mut parts = Vec::new();
        if !proto.is_empty() {
            parts.push(proto.to_string());
        }
        parts.push(format!("src net {}", prefix(src, rng.below(33))));
        parts.push(format!("dst net {}", prefix(dst, rng.below(33))));
        match rng.below(3) {
            0 => parts.push(format!("dst port {port}")),
            1 => {
                let w = rng.below(4096) as u16;
                let lo = port.saturating_sub(w / 2);
                parts.push(format!(
                    "dst port >= {lo} && dst port <= {}",
                    lo.saturating_add(w)
                ));
            }
            _ => {}
        }
        out.push(format!("{action} {}", parts.join(" && ")));
    }
    out.push("deny all".into());
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (flows, pk) = trace(2_000_000);
    if args.first().map(String::as_str) == Some("--print") {
        let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
        println!("{}", rules(n, &flows).join(",\n"));
        return;
    }
    let sizes: Vec<usize> = if args.is_empty() {
        vec![1000, 8000]
    } else {
        args.iter().filter_map(|s| s.parse().ok()).collect()
    };
    // IPv4 + UDP headers of every packet, back to back (28 bytes each).
    let mut hdrs = Vec::with_capacity(pk.len() * 28);
    for &i in &pk {
        let f = &flows[i];
        hdrs.extend_from_slice(&[0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0]);
        hdrs.extend_from_slice(&f.src);
        hdrs.extend_from_slice(&f.dst);
        hdrs.extend_from_slice(&f.sport.to_be_bytes());
        hdrs.extend_from_slice(&f.dport.to_be_bytes());
        hdrs.extend_from_slice(&[0, 30, 0, 0]);
    }
    println!("| rules | build ms (median of 5) | boxes | tree nodes | leaf entries | depth | Mlookups/s (median of 5) | batched Mlookups/s | allowed |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let r = rules(n, &flows);
        let mut builds = Vec::new();
        let mut compiled = None;
        for _ in 0..5 {
            let t = Instant::now();
            let c = compile_ip_rules(&r, 1, true).expect("generated rules parse");
            builds.push(t.elapsed().as_secs_f64() * 1e3);
            compiled = Some(c);
        }
        let Some(c) = compiled else { return };
        let mut rates = Vec::new();
        let mut allowed = 0;
        for _ in 0..5 {
            let t = Instant::now();
            allowed = 0usize;
            for h in hdrs.chunks_exact(28) {
                let v = PacketView::ip(h);
                if let Some(Some(_)) = c.classifier.lookup(&v).map(|i| c.outputs[i]) {
                    allowed += 1;
                }
            }
            rates.push(pk.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        // Batches of 64 (linerate's default BURST): `lookup_batch`.
        let mut brates = Vec::new();
        let mut out = Vec::with_capacity(64);
        for _ in 0..5 {
            let t = Instant::now();
            let mut ballowed = 0usize;
            for b in hdrs.chunks(28 * 64) {
                out.clear();
                c.classifier
                    .lookup_batch(b.chunks_exact(28).map(PacketView::ip), &mut out);
                ballowed += out
                    .iter()
                    .filter(|r| matches!(r.map(|i| c.outputs[i]), Some(Some(_))))
                    .count();
            }
            brates.push(pk.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
            assert_eq!(ballowed, allowed, "batch and single lookups disagree");
        }
        let s = c.classifier.stats();
        println!(
            "| {n} | {:.1} | {} | {} | {} ({} max) | {} | {:.1} | {:.1} | {allowed} |",
            median(builds),
            s.boxes,
            s.nodes,
            s.leaf_entries,
            s.max_leaf,
            s.depth,
            median(rates),
            median(brates)
        );
    }
}
