//! IPFilter classifier benchmark: generates rule sets the way issue 3
//! describes and measures compile time and lookups per second.
//!
//! ```text
//! classbench [RULES...]          default: 1000 8000
//! classbench --print N           print the N generated rules (IPFilter arguments)
//! ```
//!
//! Rules: see [`linerate_bench::classrules`]. Packets are the core trace's
//! first 2,000,000 packets (IPv4/UDP headers), looked up in-process: one by
//! one, in batches of 64 through the tree (`lookup_batch`), and in batches
//! of 64 through IPFilter's decision cache (`lookup_cached`). Each figure
//! is the median of 5 runs.

use linerate_bench::classrules::{rules, trace};
use linerate_elements::classification::compile::{compile_ip_rules, DecisionCache, PacketView};
use std::time::Instant;

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
    println!("| rules | build ms (median of 5) | boxes | tree nodes | leaf entries | depth | Mlookups/s (median of 5) | batched Mlookups/s | cached Mlookups/s | allowed |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
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
        // The same batches through IPFilter's decision cache (a fresh one
        // per run, default size: the first packet of each flow misses).
        let mut crates = Vec::new();
        let mut hit_rate = 0.0;
        let mut dec = Vec::with_capacity(64);
        let views: Vec<&[u8]> = hdrs.chunks_exact(28).collect();
        for _ in 0..5 {
            let mut cache = DecisionCache::new(DecisionCache::DEFAULT_ENTRIES);
            let t = Instant::now();
            let mut callowed = 0usize;
            for b in views.chunks(64) {
                dec.clear();
                c.classifier.lookup_cached(
                    b,
                    |h| PacketView::ip(h),
                    |r| matches!(r.map(|i| c.outputs[i]), Some(Some(_))),
                    &mut dec,
                    &mut cache,
                );
                callowed += dec.iter().filter(|&&a| a).count();
            }
            crates.push(pk.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
            assert_eq!(callowed, allowed, "cached and single lookups disagree");
            hit_rate = cache.hits as f64 / (cache.hits + cache.misses) as f64;
        }
        let s = c.classifier.stats();
        println!(
            "| {n} | {:.1} | {} | {} | {} ({} max) | {} | {:.1} | {:.1} | {:.1} ({:.2} % hits) | {allowed} |",
            median(builds),
            s.boxes,
            s.nodes,
            s.leaf_entries,
            s.max_leaf,
            s.depth,
            median(rates),
            median(brates),
            median(crates),
            hit_rate * 100.0
        );
    }
}
