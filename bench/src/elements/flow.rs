//! Cases for the flow meter: the microflow fast path alone (behind the
//! cheapest parser, `MarkIPHeader`, measured on its own row) and the
//! aggregator alone, fed microflow records.

use super::{traffic, Case, Goal};
use linerate_elements::flow::microflowtable::Microflow;
use linerate_runtime::flow::map_v4;
use std::path::Path;

/// `n` microflow records over `flows` distinct IPv4 5-tuples, in a
/// scrambled order, as frames (the record bytes are the frame).
fn microflows(n: usize, flows: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = (x % flows as u64) as u32;
            let mut m = Microflow::new();
            m.key.src = map_v4([10, (f >> 16) as u8, (f >> 8) as u8, f as u8]);
            m.key.dst = map_v4([192, 168, 0, 1]);
            m.key.sport = 1024 + (f % 50_000) as u16;
            m.key.dport = 443;
            m.key.proto = 6;
            m.key.version = 4;
            m.reason = 5;
            m.dir.packets = 4;
            m.dir.bytes = 4 * 576;
            m.dir.first_ns = 1_700_000_000_000_000_000;
            m.dir.last_ns = m.dir.first_ns + 1_000_000;
            m.dir.min_len = 40;
            m.dir.max_len = 1500;
            m.dir.first_len = 60;
            m.dir.second_len = 40;
            m.dir.min_ttl = 64;
            m.dir.max_ttl = 64;
            m.as_bytes().to_vec()
        })
        .collect()
}

/// The table behind `MarkIPHeader` or, with `PARSE true` in `table`,
/// alone on the Ethernet frames (as `nfs/flowmon.click` runs it: the
/// row is the whole fast path, its parse included).
fn fast_path(flows: usize, table: &str, what: &str) -> Case {
    let (name, head, how) = if table.contains("PARSE true") {
        ("MFTP", "", "parses the frames itself")
    } else {
        ("MFT", "MarkIPHeader(14) ->", "with MarkIPHeader")
    };
    let cls = |imp: &str| {
        format!(
            "elementclass {name}_{imp} {{ input -> {head} MicroflowTable({table}, IMPL {imp}) -> output }}"
        )
    };
    Case {
        prelude: format!("{}\n{}", cls("fast"), cls("reference")),
        reference: Some(format!("{name}_reference")),
        goal: Some(Goal::Mpps(50.0)),
        ..Case::header(
            "MicroflowTable",
            format!("{name}_fast"),
            format!("{what} ({how})"),
            move |s| traffic::udp4(flows, s),
        )
    }
}

fn aggregator(config: &str, what: &str) -> Case {
    Case {
        reference: Some(format!("FlowAggregator({config}, IMPL reference)")),
        goal: Some(Goal::Mpps(20.0)),
        sizes: vec![Microflow::SIZE],
        ..Case::header(
            "FlowAggregator",
            format!("FlowAggregator({config})"),
            what,
            |_| microflows(200_000, 100_000),
        )
    }
}

pub fn cases(_dir: &Path) -> Vec<Case> {
    vec![
        Case::header(
            "MarkIPHeader",
            "MarkIPHeader(14)",
            "parser alone (subtract from MicroflowTable)",
            |s| traffic::udp4(1024, s),
        ),
        fast_path(1024, "TABLE 1MB", "1 MB, 1k flows: hits"),
        fast_path(1024, "TABLE 1MB, WAYS 2", "1 MB 2-way, 1k flows: hits"),
        fast_path(
            65536,
            "TABLE 1MB",
            "1 MB, 64k flows round-robin: every packet evicts",
        ),
        fast_path(1024, "PARSE true, TABLE 1MB", "1 MB, 1k flows: hits"),
        fast_path(
            65536,
            "PARSE true, TABLE 1MB",
            "1 MB, 64k flows round-robin: every packet evicts",
        ),
        aggregator(
            "ACTIVE 0, IDLE 0, TCPEND false",
            "microflows, 100k flows, no timeouts",
        ),
        Case {
            // The reference scans every flow per microflow for timeouts:
            // far too slow to time with 100k flows.
            reference: None,
            ..aggregator(
                "ACTIVE 300, IDLE 60, TIME packet",
                "microflows, 100k flows, timeouts",
            )
        },
        aggregator(
            "ACTIVE 0, IDLE 0, BIFLOW true",
            "microflows, 100k flows, biflows",
        ),
    ]
}
