//! The floor for trace replay: the least a program can do to go through a pcap file.
//!
//! `pcap_floor FILE.pcap` memory-maps the file (as `linerate_io::pcap::PcapReader` does:
//! a read-only mapping with sequential read-ahead advice), then touches each record once:
//! it reads the record header's timestamp seconds and captured length and the first byte
//! of the data, adds them to a checksum, and steps to the next record. It prints the
//! records, the seconds from opening the file to the end of the loop, and the rate in
//! Mpps. Classic pcap only (either byte order, 16-byte record headers); it trusts the file
//! except for never reading past its end. Nothing is parsed or checked beyond that, so a
//! real reader can only be slower: this is what `FromDump` is measured against.
//!
//! `pcap_floor --lines[=AHEAD] FILE` measures the memory side alone: the file mapped
//! and populated first, it reads one byte of every 64-byte line (loads that do not
//! depend on each other, unlike a record walk), with a software prefetch `AHEAD` bytes
//! ahead if given, three times, and prints the best pass's seconds and GB/s. Any file.

use std::fs::File;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use memmap2::Mmap;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let [_, mode, path] = args.as_slice() {
        if let Some(rest) = mode.strip_prefix("--lines") {
            let ahead = match rest.strip_prefix('=').map(str::parse::<usize>) {
                None if rest.is_empty() => None,
                Some(Ok(a)) => Some(a),
                _ => {
                    eprintln!("pcap_floor: --lines takes =BYTES");
                    return ExitCode::from(2);
                }
            };
            return lines(path, ahead);
        }
    }
    let [_, path] = args.as_slice() else {
        eprintln!("usage: pcap_floor FILE.pcap | pcap_floor --lines[=AHEAD] FILE");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pcap_floor: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // SAFETY: read-only mapping of a file nobody writes while we read it.
    let map = match unsafe { Mmap::map(&file) } {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pcap_floor: {path}: mmap: {e}");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    let data: &[u8] = &map;

    let big_endian = match data.first_chunk::<4>().map(|m| u32::from_le_bytes(*m)) {
        Some(0xa1b2_c3d4 | 0xa1b2_3c4d) => false,
        Some(0xd4c3_b2a1 | 0x4d3c_b2a1) => true,
        _ => {
            eprintln!("pcap_floor: {path}: not a classic pcap file");
            return ExitCode::FAILURE;
        }
    };
    let word = |at: usize| -> u32 {
        let w = [data[at], data[at + 1], data[at + 2], data[at + 3]];
        if big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };

    let mut pos = 24;
    let mut records = 0u64;
    let mut checksum = 0u64;
    while pos + 16 <= data.len() {
        let sec = word(pos);
        let caplen = word(pos + 8) as usize;
        let end = pos + 16 + caplen;
        if end > data.len() {
            break;
        }
        let first = if caplen > 0 { data[pos + 16] } else { 0 };
        checksum = checksum
            .wrapping_add(u64::from(sec))
            .wrapping_add(caplen as u64)
            .wrapping_add(u64::from(first));
        records += 1;
        pos = end;
    }
    black_box(checksum);
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "records {records} seconds {seconds:.4} Mpps {:.2} checksum {checksum:#x}",
        records as f64 / seconds / 1e6
    );
    ExitCode::SUCCESS
}

/// `--lines`: the best of three passes reading one byte a 64-byte line of
/// `path`, mapped and populated first, prefetching `ahead` bytes ahead.
fn lines(path: &str, ahead: Option<usize>) -> ExitCode {
    let map = match File::open(path).and_then(|f| {
        // SAFETY: read-only mapping of a file nobody writes while we read it.
        unsafe { memmap2::MmapOptions::new().populate().map(&f) }
    }) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pcap_floor: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let data: &[u8] = &map;
    let mut best = f64::INFINITY;
    let mut sum = 0u64;
    for _ in 0..3 {
        let t = Instant::now();
        for i in (0..data.len()).step_by(64) {
            if let Some(a) = ahead {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: a prefetch is a hint; it never faults.
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    _mm_prefetch::<_MM_HINT_T0>(data.as_ptr().wrapping_add(i + a) as *const i8);
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = a;
            }
            sum = sum.wrapping_add(u64::from(black_box(data[i])));
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    black_box(sum);
    println!(
        "bytes {} seconds {best:.4} GB/s {:.2}",
        data.len(),
        data.len() as f64 / best / 1e9
    );
    ExitCode::SUCCESS
}
