//! Cases for framework elements that give the table its scale: a no-op, a
//! counter and Click's IP header check; and `ReorderBuffer`.

use super::{traffic, Case};
use std::path::Path;

pub fn cases(_dir: &Path) -> Vec<Case> {
    vec![
        Case::header("Null", "Null", "no-op", |s| traffic::udp4(1024, s)),
        Case::header("Counter", "Counter", "packets and bytes", |s| {
            traffic::udp4(1024, s)
        }),
        Case::header(
            "CheckIPHeader",
            "CheckIPHeader(14)",
            "IPv4 header and checksum",
            |s| traffic::udp4(1024, s),
        ),
        reorder_case(),
    ]
}

/// Frames for `ReorderBuffer`: [`REORDER_FRAMES`] NVGRE frames of `len`
/// bytes (at least 56) whose VSIDs, the sequence numbers `NVGREDecap`
/// stores in the `SEQUENCE_NUMBER` annotation, run 0, 1, 2, ... scrambled
/// within each block of 16 (position `i` of a block carries number
/// `(7 i + 3) mod 16` of it), so that most packets wait in the buffer for
/// up to 15 positions, across batch boundaries too.
fn reordered(len: usize) -> Vec<Vec<u8>> {
    let len = len.max(56);
    (0..REORDER_FRAMES as u32)
        .map(|i| {
            let seq = (i & !15) | ((7 * (i & 15) + 3) & 15);
            let mut f = vec![0u8; len];
            f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
            let ip = [
                0x45, 0, 0, 0, 0, 0, 0, 0, 64, 47, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            ];
            f[14..34].copy_from_slice(&ip);
            f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
            let v = seq.to_be_bytes();
            f[34..42].copy_from_slice(&[0x20, 0x00, 0x65, 0x58, v[1], v[2], v[3], 0]);
            f[42..56].copy_from_slice(&[2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 3, 0x08, 0x00]);
            f
        })
        .collect()
}

/// Distinct frames, so distinct sequence numbers: at the default
/// `--packets` (5 M) and this case's scale (0.04) a run replays 200,000
/// packets, none twice (with more packets the replay wraps and the repeated
/// numbers count as `late`).
const REORDER_FRAMES: usize = 1 << 18;

/// `ReorderBuffer` behind an `NVGREDecap` that numbers the packets (both
/// in each row's time, so in the reference's too).
fn reorder_case() -> Case {
    let cls = |imp: &str| {
        format!(
            "elementclass ROB_{imp} {{ input -> NVGREDecap(ANNO SEQUENCE_NUMBER) -> ReorderBuffer(1024, ANNO SEQUENCE_NUMBER, START 0, IMPL {imp}) -> output }}"
        )
    };
    Case {
        prelude: format!("{}\n{}", cls("fast"), cls("reference")),
        reference: Some("ROB_reference".into()),
        scale: 0.04,
        ..Case::header(
            "ReorderBuffer",
            "ROB_fast",
            "blocks of 16 scrambled (with NVGREDecap numbering)",
            reordered,
        )
    }
}
