//! Cases for the flow exporters (`IPFIXExport`, `NetFlowV9Export`): flow
//! records (`FlowRecord` packets, as `FlowAggregator` emits them) encoded
//! into messages written to `/dev/null`, so the row is the encoding and
//! message-building cost per record (the UDP path is measured end to end
//! by `bench/flowmon.sh`).

use super::Case;
use linerate_elements::flow::record::{Direction, FlowRecord};
use linerate_runtime::flow::{map_v4, FlowKey};
use std::path::Path;

/// 1,024 records: IPv4 and IPv6 (1 in 4), one-way and biflow (1 in 3).
fn records(_size: usize) -> Vec<Vec<u8>> {
    (0..1024u32)
        .map(|i| {
            let mut r = FlowRecord::new();
            let v6 = i % 4 == 3;
            let mut s = [0u8; 16];
            s[..4].copy_from_slice(&i.to_be_bytes());
            r.key = FlowKey {
                src: if v6 { s } else { map_v4(i.to_be_bytes()) },
                dst: if v6 {
                    s.map(|b| !b)
                } else {
                    map_v4((!i).to_be_bytes())
                },
                sport: i as u16,
                dport: 443,
                proto: 6,
                version: if v6 { 6 } else { 4 },
            };
            let d = Direction {
                packets: 12,
                bytes: 9000,
                first_ns: 1_700_000_000_000_000_000 + u64::from(i) * 1000,
                last_ns: 1_700_000_000_500_000_000 + u64::from(i) * 1000,
                min_len: 52,
                max_len: 1500,
                first_len: 60,
                second_len: 52,
                tcp_flags: 0x1b,
                min_ttl: 50,
                max_ttl: 64,
                ..Direction::default()
            };
            r.fwd = d;
            if i % 3 == 0 {
                r.biflow = 1;
                r.rev = d;
            }
            r.end_reason = 3;
            r.as_bytes().to_vec()
        })
        .collect()
}

/// The exporter cases.
pub fn cases(_dir: &Path) -> Vec<Case> {
    ["IPFIXExport", "NetFlowV9Export"]
        .into_iter()
        .map(|class| {
            let cfg = |imp: &str| format!("{class}(FILENAME /dev/null, IMPL {imp})");
            Case {
                reference: Some(cfg("reference")),
                outputs: 0,
                ..Case::header(class, cfg("fast"), "records to a file, MTU 1400", records)
            }
        })
        .collect()
}
