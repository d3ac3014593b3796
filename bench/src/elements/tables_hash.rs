//! Cases for the exact-match tables: `CuckooHash` holding 1,000,000 keys
//! (looked up all, or 1,024 of them: the lookup's work without its memory
//! misses, as LPM's 1,024-destination rows) and `FlowCache` (16K lines, 4-way) in front of a 1,000,000-flow table,
//! with its misses through the slow path and, alone, its fast path.
//!
//! The tables hold the 5-tuples of `MemoryReplay`'s frames `0..1_000_000`
//! (frame `i` is `10.0.0.0 + i:1024 + i % 60000 > 10.128.0.0 + i:5000 +
//! i % 1000`, UDP); frames from `1_000_000` on are not in them. A table file
//! is written into the scratch directory the first time its traffic is
//! built, so that filtered-out cases cost nothing.

use super::{Case, Goal};
use linerate_elements::model::memoryreplay::build_frame;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Keys in the tables.
const ENTRIES: u32 = 1_000_000;

/// xorshift64*: a fixed pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) * u64::from(n)) >> 32) as u32
    }
}

fn frame(i: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    build_frame(i, &mut f);
    f
}

/// Frame `i`'s 5-tuple as `SADDR SPORT DADDR DPORT PROTO`.
fn flow_text(i: u32) -> String {
    format!(
        "{} {} {} {} 17",
        Ipv4Addr::from(0x0A00_0000 | (i & 0x00FF_FFFF)),
        1024 + i % 60000,
        Ipv4Addr::from(0x0A80_0000 | (i & 0x00FF_FFFF)),
        5000 + i % 1000
    )
}

/// Write `path` (once) with one line per table entry.
fn table_file(path: &Path, line: impl Fn(u32) -> String) {
    if path.exists() {
        return;
    }
    let mut s = String::with_capacity(ENTRIES as usize * 48);
    for i in 0..ENTRIES {
        let _ = writeln!(s, "{}", line(i));
    }
    std::fs::write(path, s).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The first `count` of every table entry's frame once, in a random order,
/// a share `miss_share` of them replaced by frames the table does not hold.
fn permutation(len: usize, miss_share: f64, count: usize) -> Vec<Vec<u8>> {
    let mut order: Vec<u32> = (0..ENTRIES).collect();
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for i in (1..order.len()).rev() {
        order.swap(i, r.below(i as u32 + 1) as usize);
    }
    let misses = (miss_share * f64::from(u32::MAX)) as u32;
    order
        .into_iter()
        .take(count)
        .map(|i| {
            let i = if r.below(u32::MAX) < misses {
                i + ENTRIES
            } else {
                i
            };
            frame(i, len)
        })
        .collect()
}

/// A `CuckooHash` row: the table holds every entry; the traffic is the
/// first `distinct` frames of [`permutation`] (all of them: every key once;
/// fewer: a set of keys that stays in the caches, so that the row measures
/// the lookup's own work without its memory misses, and has no goal).
fn cuckoo(dir: &Path, what: &str, key: &str, miss_share: f64, distinct: usize) -> Case {
    let path = dir.join(format!("cuckoo-{}.txt", key.replace(' ', "_")));
    let line: fn(u32) -> String = if key == "FLOW" {
        |i| format!("{} {i}", flow_text(i))
    } else {
        |i| {
            // Packet bytes 26..38: addresses and ports.
            let f = frame(i, 64);
            let hex: String = f[26..38].iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex} {i}")
        }
    };
    let conf = |imp: &str| {
        format!(
            "CuckooHash(KEY {key}, CAPACITY {ENTRIES}, FILE \"{}\", IMPL {imp})",
            path.display()
        )
    };
    let (config, reference, prelude) = if key == "FLOW" {
        let class = |name: &str, imp: &str| {
            format!(
                "elementclass {name} {{ input -> MarkIPHeader(14) -> t :: {}; t[0] -> [0]output; t[1] -> [1]output; }}\n",
                conf(imp)
            )
        };
        (
            "CuckooFlowFast".to_string(),
            "CuckooFlowRef".to_string(),
            class("CuckooFlowFast", "fast") + &class("CuckooFlowRef", "reference"),
        )
    } else {
        (conf("fast"), conf("reference"), String::new())
    };
    let table = path.clone();
    Case {
        element: "CuckooHash",
        config,
        what: what.into(),
        reference: Some(reference),
        prelude,
        outputs: 2,
        sizes: vec![64],
        frames: Box::new(move |len| {
            table_file(&table, line);
            permutation(len, miss_share, distinct)
        }),
        per_byte: false,
        scale: 1.0,
        goal: (distinct >= ENTRIES as usize).then_some(Goal::Mpps(60.0)),
    }
}

/// The generator of [`cache_traffic`] after it drew `hot` hot flows, and
/// the flows (table entries, possibly repeated).
fn hot_rng(hot: u32) -> (Rng, Vec<u32>) {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let flows = (0..hot).map(|_| r.below(ENTRIES)).collect();
    (r, flows)
}

/// Frames for a flow cache: a share `hot_share` of packets from `hot`
/// flows, the rest from the other flows of the table, all different.
fn cache_traffic(len: usize, frames: usize, hot: u32, hot_share: f64) -> Vec<Vec<u8>> {
    let (mut r, hot_flows) = hot_rng(hot);
    let cut = (hot_share * f64::from(u32::MAX)) as u32;
    (0..frames)
        .map(|_| {
            let i = if r.below(u32::MAX) < cut {
                hot_flows[r.below(hot) as usize]
            } else {
                r.below(ENTRIES)
            };
            frame(i, len)
        })
        .collect()
}

/// The start of both FlowCache rows' classes: the element, its table
/// (`path`) and `IMPL`, after `MarkIPHeader`; the rows differ in where its
/// outputs go.
fn flow_cache_input(path: &Path, imp: &str) -> String {
    format!(
        "input -> MarkIPHeader(14) -> fc :: FlowCache(LINES 16384, WAYS 4, FLOWS {ENTRIES}, FILE \"{}\", IMPL {imp});",
        path.display()
    )
}

fn flow_cache(dir: &Path) -> Case {
    let path: PathBuf = dir.join("flowcache-flows.txt");
    let class = |name: &str, imp: &str| {
        format!(
            "elementclass {name} {{ {} fc[0] -> output; fc[1] -> [1]fc; }}\n",
            flow_cache_input(&path, imp)
        )
    };
    Case {
        element: "FlowCache",
        config: "FlowCacheFast".into(),
        what: "16K lines 4-way, 1M flows, 95 % hit, misses via slow path".into(),
        reference: Some("FlowCacheRef".into()),
        prelude: class("FlowCacheFast", "fast") + &class("FlowCacheRef", "reference"),
        outputs: 1,
        sizes: vec![64],
        frames: Box::new(move |len| {
            table_file(&path, flow_text);
            cache_traffic(len, 1 << 18, HOT_FLOWS, HOT_SHARE)
        }),
        per_byte: false,
        scale: 1.0,
        goal: Some(Goal::Mpps(80.0)),
    }
}

/// The fast path alone: the same traffic and table, misses leaving
/// on output 1 (the slow-path output) to `Discard`. The cache is filled
/// once, when the router starts, by a second source inside the class that
/// sends each hot flow's frame through the slow path (input 1); that
/// warm-up (8,162 packets) is timed with the run. Nothing is installed
/// afterwards, so hot flows whose set overflowed stay misses: 94.5 % of
/// packets hit (`hits / (hits + misses)`). The goal (80 Mpps at
/// 95 % hits, misses going "to a slow-path output so that the fast path
/// never waits") is judged on this row; the row above also runs the slow
/// path for the misses on the same core.
fn flow_cache_fast_path(dir: &Path) -> Case {
    let path: PathBuf = dir.join("flowcache-flows.txt");
    let warm: PathBuf = dir.join("flowcache-hot.pcap");
    let class = |name: &str, imp: &str| {
        format!(
            "elementclass {name} {{ {} fc[0] -> [0]output; fc[1] -> [1]output; MemoryReplay(FILE \"{}\", COPY true, LIMIT {HOT_FLOWS}, STOP false) -> MarkIPHeader(14) -> [1]fc; }}\n",
            flow_cache_input(&path, imp),
            warm.display()
        )
    };
    Case {
        config: "FlowCacheFastPath".into(),
        what: "16K lines 4-way, 1M flows, 94.5 % hit, fast path alone (misses to output 1)".into(),
        reference: Some("FlowCacheFastPathRef".into()),
        prelude: class("FlowCacheFastPath", "fast") + &class("FlowCacheFastPathRef", "reference"),
        outputs: 2,
        frames: Box::new(move |len| {
            table_file(&path, flow_text);
            let (_, hot) = hot_rng(HOT_FLOWS);
            let mut seen = std::collections::HashSet::new();
            let frames: Vec<Vec<u8>> = hot
                .iter()
                .filter(|&&i| seen.insert(i))
                .map(|&i| frame(i, len))
                .collect();
            super::write_pcap(&warm, &frames).unwrap_or_else(|e| panic!("{}: {e}", warm.display()));
            cache_traffic(len, 1 << 18, HOT_FLOWS, HOT_SHARE)
        }),
        // The element, frame size and goal of the row above.
        ..flow_cache(dir)
    }
}

/// Hot flows and their share of packets: a 95 % cache hit rate (measured:
/// `hits / (hits + misses)` of the fast path).
const HOT_FLOWS: u32 = 8192;
const HOT_SHARE: f64 = 0.98;

pub fn cases(dir: &Path) -> Vec<Case> {
    vec![
        cuckoo(
            dir,
            "1M keys, OFFSET 26 LEN 12, all hit",
            "OFFSET 26 LEN 12",
            0.0,
            ENTRIES as usize,
        ),
        cuckoo(
            dir,
            "1M keys, OFFSET 26 LEN 12, 1,024 of them looked up (cache-resident)",
            "OFFSET 26 LEN 12",
            0.0,
            1024,
        ),
        cuckoo(
            dir,
            "1M keys, OFFSET 26 LEN 12, 50 % hit",
            "OFFSET 26 LEN 12",
            0.5,
            ENTRIES as usize,
        ),
        cuckoo(
            dir,
            "1M keys, 5-tuple (+MarkIPHeader), all hit",
            "FLOW",
            0.0,
            ENTRIES as usize,
        ),
        flow_cache(dir),
        flow_cache_fast_path(dir),
    ]
}
