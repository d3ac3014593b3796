//! Measurement behind the choice of a hand-written record loop over the `pcap-file` crate
//! (see the `linerate_io::pcap` module doc). Ignored by default; run on a large trace:
//!
//! ```text
//! gentrace small20m /tmp/small20m.pcap
//! LINERATE_TRACE=/tmp/small20m.pcap cargo test --release -p linerate-io \
//!     --test compare_pcap_file -- --ignored --nocapture
//! ```
//!
//! Each contender goes through the same already-mapped bytes (the file is read once
//! beforehand so all run from the page cache) and folds the same values into a checksum;
//! the best of five passes (`LINERATE_PASSES`) is reported in ns/record.

use std::hint::black_box;
use std::time::Instant;

use linerate_io::pcap::PcapReader;

/// Runs `setup` then times `run` on its result (not its drop), `LINERATE_PASSES` times
/// (default 5); prints the best ns/record.
fn best_of<S, F: FnMut() -> S, G: FnMut(&mut S) -> (u64, u64)>(
    name: &str,
    mut setup: F,
    mut run: G,
) -> (u64, u64) {
    let mut best = f64::MAX;
    let mut result = (0, 0);
    let passes = std::env::var("LINERATE_PASSES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(5);
    for _ in 0..passes {
        let mut input = setup();
        let t = Instant::now();
        result = black_box(run(&mut input));
        best = best.min(t.elapsed().as_secs_f64());
        // Dropped outside the timed region (unmapping or freeing is not reading).
        drop(input);
    }
    println!(
        "{name:>22}: {:.2} ns/record ({} records)",
        best * 1e9 / result.0 as f64,
        result.0
    );
    result
}

fn map(path: &str) -> memmap2::Mmap {
    let f = std::fs::File::open(path).expect("open");
    // SAFETY: test input, not modified while mapped.
    unsafe { memmap2::Mmap::map(&f) }.expect("mmap")
}

/// Same work as bench/src/bin/pcap_floor.rs, on a little-endian classic pcap.
fn bare(d: &[u8]) -> (u64, u64) {
    let mut pos = 24;
    let (mut n, mut sum) = (0u64, 0u64);
    while pos + 16 <= d.len() {
        let w = |at: usize| u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
        let caplen = w(pos + 8) as usize;
        let end = pos + 16 + caplen;
        if end > d.len() {
            break;
        }
        let first = if caplen > 0 { d[pos + 16] } else { 0 };
        sum = sum
            .wrapping_add(u64::from(w(pos)))
            .wrapping_add(caplen as u64)
            .wrapping_add(u64::from(first));
        n += 1;
        pos = end;
    }
    (n, sum)
}

fn ours(r: &mut PcapReader) -> (u64, u64) {
    let (mut n, mut sum) = (0u64, 0u64);
    while let Some(Ok(rec)) = r.next_record() {
        sum = sum
            .wrapping_add(rec.ts_ns / 1_000_000_000)
            .wrapping_add(rec.data.len() as u64)
            .wrapping_add(u64::from(rec.data.first().copied().unwrap_or(0)));
        n += 1;
    }
    (n, sum)
}

fn pcap_file(d: &[u8]) -> (u64, u64) {
    let (mut rest, parser) = pcap_file::pcap::PcapParser::new(d).expect("header");
    let (mut n, mut sum) = (0u64, 0u64);
    while !rest.is_empty() {
        let Ok((next, pkt)) = parser.next_packet(rest) else {
            break;
        };
        sum = sum
            .wrapping_add(pkt.timestamp.as_secs())
            .wrapping_add(pkt.data.len() as u64)
            .wrapping_add(u64::from(pkt.data.first().copied().unwrap_or(0)));
        n += 1;
        rest = next;
    }
    (n, sum)
}

#[test]
#[ignore = "measurement; needs LINERATE_TRACE pointing at a large classic pcap"]
fn compare_record_loops() {
    let Ok(path) = std::env::var("LINERATE_TRACE") else {
        panic!("set LINERATE_TRACE to a classic little-endian pcap file");
    };
    let path = path.as_str();
    println!("in memory (parse only):");
    let buf = std::fs::read(path).expect("read");
    let expect = best_of("bare loop", || &buf[..], |d| bare(d));
    let owned = || PcapReader::from_vec(path, buf.clone()).expect("parse");
    assert_eq!(best_of("ours", owned, ours), expect);
    assert_eq!(best_of("pcap-file", || &buf[..], |d| pcap_file(d)), expect);
    drop(buf);
    println!("fresh mapping of the cached file each pass (page faults included):");
    assert_eq!(best_of("bare loop", || map(path), |m| bare(m)), expect);
    let open = || PcapReader::open(path).expect("open");
    assert_eq!(best_of("ours", open, ours), expect);
    assert_eq!(best_of("pcap-file", || map(path), |m| pcap_file(m)), expect);
}

/// The behavioural reason in the module doc: a record cut to a short snaplen (original
/// length above the snaplen, as in any `tcpdump -s 96` capture) is an error for
/// `pcap-file` and an ordinary record for us.
#[test]
fn short_snaplen_capture_is_an_error_for_pcap_file_only() {
    let mut f = Vec::new();
    f.extend(0xa1b2_c3d4u32.to_le_bytes());
    f.extend(2u16.to_le_bytes());
    f.extend(4u16.to_le_bytes());
    f.extend([0; 8]);
    f.extend(96u32.to_le_bytes()); // snaplen
    f.extend(1u32.to_le_bytes());
    for word in [1u32, 0, 96, 1500] {
        f.extend(word.to_le_bytes());
    }
    f.extend([0xab; 96]);

    let (rest, parser) = pcap_file::pcap::PcapParser::new(&f).expect("header");
    assert!(parser.next_packet(rest).is_err());

    let mut r = PcapReader::from_vec("short-snaplen", f).expect("header");
    let rec = r.next_record().expect("a record").expect("no error");
    assert_eq!((rec.data.len(), rec.orig_len), (96, 1500));
}
