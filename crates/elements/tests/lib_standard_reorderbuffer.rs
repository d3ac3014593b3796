//! ReorderBuffer on literal sequences: order restored, late and duplicate
//! packets to output 1, the window moving, the timeout on simulated time,
//! and a differential property test of `IMPL fast` against `IMPL
//! reference`. A test-only element, `SeqFromData`, copies each packet's
//! first four bytes (big-endian) into the `SEQUENCE_NUMBER` annotation.

use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, Registry, Router, RouterOptions,
};
use proptest::prelude::*;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

struct SeqFromData;

impl Element for SeqFromData {
    fn action(&mut self, mut batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        for p in batch.iter_mut() {
            let mut b = [0u8; 4];
            let n = p.len().min(4);
            b[..n].copy_from_slice(&p.data()[..n]);
            p.anno_mut().set_u32(36, u32::from_be_bytes(b));
        }
        batch
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn make_seq(_: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Ok(Box::new(SeqFromData))
}

fn registry() -> Registry {
    let mut r = linerate_elements::registry();
    r.extend(&[ElementClass {
        name: "SeqFromData",
        port_count: "1/1",
        processing: "a/a",
        doc: "",
        make: make_seq,
    }]);
    r
}

fn run(text: &str, opts: RouterOptions) -> Router {
    let reg = registry();
    let o = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "reorder.click", &o).unwrap_or_else(|d| panic!("{d}"));
    let mut r = Router::build(&c, &reg, opts).unwrap_or_else(|d| panic!("{d}"));
    r.run();
    r
}

fn read(r: &Router, h: &str) -> String {
    r.handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"))
        .trim_end()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("linerate-reorder-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)))
}

/// Packets carrying `seqs`, 8 bytes each, at `gaps_ms` after each other.
fn pcap(seqs: &[u32], gap_ms: &[u64]) -> PathBuf {
    let path = tmp("in.pcap");
    let mut w = PcapWriter::create(&path, LinkType::ETHERNET, 65535, false).unwrap();
    let mut t = 1_700_000_000_000_000_000u64;
    for (i, s) in seqs.iter().enumerate() {
        t += gap_ms.get(i).copied().unwrap_or(0) * 1_000_000;
        let mut p = s.to_be_bytes().to_vec();
        p.extend((i as u32).to_be_bytes());
        w.write(t, 8, &p).unwrap();
    }
    w.flush().unwrap();
    path
}

fn seqs(p: &Path) -> Vec<u32> {
    let mut r = PcapReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        let d = x.unwrap().data.to_vec();
        v.push(u32::from_be_bytes([d[0], d[1], d[2], d[3]]));
    }
    v
}

fn reorder(
    input: &[u32],
    gaps: &[u64],
    args: &str,
    opts: RouterOptions,
) -> (Router, Vec<u32>, Vec<u32>) {
    let (i, o0, o1) = (pcap(input, gaps), tmp("o0.pcap"), tmp("o1.pcap"));
    let timing = if gaps.is_empty() { "" } else { ", TIMING true" };
    let r = run(
        &format!(
            "FromDump(\"{}\", STOP true{timing}) -> SeqFromData -> r :: ReorderBuffer({args}) -> ToDump(\"{}\");
             r[1] -> ToDump(\"{}\");",
            i.display(),
            o0.display(),
            o1.display()
        ),
        opts,
    );
    (r, seqs(&o0), seqs(&o1))
}

const HANDLERS: [&str; 8] = [
    "count",
    "reordered",
    "late",
    "duplicates",
    "lost",
    "timeouts",
    "buffered",
    "next",
];

fn handlers(r: &Router) -> Vec<String> {
    HANDLERS
        .iter()
        .map(|h| read(r, &format!("r.{h}")))
        .collect()
}

#[test]
fn restores_order_and_rejects_late_and_duplicates() {
    for imp in ["fast", "reference"] {
        for burst in [1, 64] {
            let opts = RouterOptions {
                default_burst: burst,
                ..RouterOptions::default()
            };
            let (r, out, rej) = reorder(
                &[0, 2, 2, 1, 3, 5, 4, 1, 6],
                &[],
                &format!("TIMEOUT 0, IMPL {imp}"),
                opts,
            );
            assert_eq!(out, [0, 1, 2, 3, 4, 5, 6], "{imp} {burst}");
            assert_eq!(rej, [2, 1]);
            assert_eq!(handlers(&r), ["7", "2", "1", "1", "0", "0", "0", "7"]);
        }
    }
}

#[test]
fn window_moves_and_counts_lost_numbers() {
    for imp in ["fast", "reference"] {
        // WINDOW 3 is 4 slots. 19 moves the window to 16..19 (11, 13, 14,
        // 15 lost, 12 released), 20 to 17..20 (16 lost); 17 then goes.
        let (r, out, rej) = reorder(
            &[10, 12, 19, 20, 17],
            &[],
            &format!("3, START 10, TIMEOUT 0, IMPL {imp}"),
            RouterOptions::default(),
        );
        assert_eq!(out, [10, 12, 17], "{imp}");
        assert!(rej.is_empty());
        assert_eq!(handlers(&r), ["3", "3", "0", "0", "5", "0", "2", "18"]);
        // Wrapping numbers.
        let (_, out, _) = reorder(
            &[u32::MAX - 1, 0, u32::MAX, 1],
            &[],
            &format!("TIMEOUT 0, IMPL {imp}"),
            RouterOptions::default(),
        );
        assert_eq!(out, [u32::MAX - 1, u32::MAX, 0, 1]);
    }
}

#[test]
fn timeout_skips_a_gap_on_simulated_time() {
    for imp in ["fast", "reference"] {
        let opts = RouterOptions {
            simtime: Some(1_000_000_000),
            default_burst: 1,
            ..RouterOptions::default()
        };
        // 1 never comes; 2 and 3 wait 10 ms, then go; 4 comes 50 ms later.
        let (r, out, _) = reorder(
            &[0, 2, 3, 4],
            &[0, 0, 0, 50],
            &format!("TIMEOUT 10ms, IMPL {imp}"),
            opts,
        );
        assert_eq!(out, [0, 2, 3, 4], "{imp}");
        assert_eq!(handlers(&r), ["4", "2", "0", "0", "1", "1", "0", "5"]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Also with a nonzero `TIMEOUT` (`timeout_ms` 0 is `TIMEOUT 0`): the
    /// packets come 0 to 3 ms apart on simulated time, so some gaps
    /// outlive the timeout and others do not.
    #[test]
    fn fast_equals_reference(
        input in prop::collection::vec(0u32..80, 1..150),
        gaps in prop::collection::vec(prop::sample::select(vec![0u64, 0, 0, 1, 3]), 150),
        window in 1u32..40,
        start in prop::option::of(0u32..10),
        burst in 1usize..70,
        timeout_ms in prop::sample::select(vec![0u64, 0, 1, 2, 5]),
    ) {
        let start = start.map(|s| format!(", START {s}")).unwrap_or_default();
        let mut res = Vec::new();
        for imp in ["fast", "reference"] {
            let opts = RouterOptions {
                simtime: Some(1_000_000_000),
                default_burst: burst,
                ..RouterOptions::default()
            };
            let args = format!("{window}{start}, TIMEOUT {timeout_ms}ms, IMPL {imp}");
            let (r, out, rej) = reorder(&input, &gaps[..input.len()], &args, opts);
            res.push((out, rej, handlers(&r)));
        }
        prop_assert_eq!(&res[0], &res[1]);
    }
}
