//! The real traces of shared/traces, read from mapped files, gzip files, a FIFO and
//! standard input, and copied byte-for-byte through the writer.
//!
//! The traces are looked up in `$LINERATE_TRACES_DIR`, then `shared/traces` beside the
//! repository (where CI puts it), then inside it.

mod common;

use std::io::Write;
use std::path::PathBuf;

use common::*;
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter};

const PATHSPIDER: (&str, u64) = ("pathspider-real-lan2012.pcap", 62_781);
const NDPI: (&str, u64) = ("ndpi-tests-mix.pcap", 102_031);

fn trace(name: &str) -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs: Vec<PathBuf> = std::env::var_os("LINERATE_TRACES_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    dirs.push(repo.join("../shared/traces"));
    dirs.push(repo.join("shared/traces"));
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("trace {name} not found in {dirs:?}"))
}

#[test]
fn real_traces_record_counts() {
    for (name, count) in [PATHSPIDER, NDPI] {
        let path = trace(name);
        let file_len = std::fs::metadata(&path).unwrap().len();
        let mut r = PcapReader::open(&path).unwrap();
        assert!(r.is_mapped());
        assert_eq!(r.link_type(), LinkType::ETHERNET);
        assert!(!r.is_nanosecond());
        let (mut n, mut bytes, mut last_ts) = (0u64, 0u64, 0u64);
        while let Some(rec) = r.next_record() {
            let rec = rec.unwrap();
            assert_eq!(rec.link_type, LinkType::ETHERNET);
            assert!(rec.data.len() as u32 <= rec.orig_len);
            n += 1;
            bytes += rec.data.len() as u64;
            last_ts = rec.ts_ns;
        }
        assert_eq!(n, count, "{name}");
        let stats = *r.stats();
        assert_eq!(stats.records, count);
        assert_eq!((stats.truncated, stats.corrupt, stats.empty), (0, 0, 0));
        // Every byte accounted for: file header, record headers, data.
        assert_eq!(24 + 16 * n + bytes, file_len);
        assert_eq!(r.position(), file_len);
        // 2012-11-23 for the LAN capture; anything after 2000 for both.
        assert!(last_ts > 946_684_800 * 1_000_000_000, "{name}");
    }
}

/// The pathspider trace as owned records.
fn pathspider_records() -> Vec<Rec> {
    let (recs, err, _) = read_all(&mut PcapReader::open(trace(PATHSPIDER.0)).unwrap());
    assert_eq!(err, None);
    recs
}

#[test]
fn gzip_files_are_decompressed() {
    let plain = std::fs::read(trace(PATHSPIDER.0)).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&plain).unwrap();
    let gz = enc.finish().unwrap();
    // By magic, whatever the name.
    for suffix in [".pcap.gz", ".pcap"] {
        let f = TempPath::with_bytes(suffix, &gz);
        let mut r = PcapReader::open(&f.0).unwrap();
        assert!(!r.is_mapped());
        assert_eq!(r.data_base(), &plain[..]);
        let (recs, err, _) = read_all(&mut r);
        assert_eq!(err, None);
        assert_eq!(recs, pathspider_records());
    }
    // Corrupt gzip data is an error naming the file.
    let mut broken = gz.clone();
    broken.truncate(gz.len() / 2);
    let f = TempPath::with_bytes(".pcap.gz", &broken);
    let msg = PcapReader::open(&f.0).unwrap_err().to_string();
    assert!(msg.contains("gzip decompression failed"), "{msg}");
    assert!(msg.contains(&f.0.display().to_string()), "{msg}");
}

#[cfg(unix)]
#[test]
fn fifo_is_read_fully() {
    let f = TempPath::new(".fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&f.0)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
    let fifo = f.0.clone();
    let writer = std::thread::spawn(move || {
        let bytes = std::fs::read(trace(PATHSPIDER.0)).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(fifo)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
    });
    let mut r = PcapReader::open(&f.0).unwrap();
    writer.join().unwrap();
    assert!(!r.is_mapped());
    let (recs, err, _) = read_all(&mut r);
    assert_eq!(err, None);
    assert_eq!(recs.len() as u64, PATHSPIDER.1);
}

/// Run by `stdin_is_read_fully` in a child process with the trace on standard input.
#[test]
#[ignore = "helper: run by stdin_is_read_fully"]
fn stdin_child() {
    if std::env::var_os("LINERATE_STDIN_CHILD").is_none() {
        return; // only meaningful with the trace on stdin
    }
    let mut r = PcapReader::open("-").unwrap();
    assert_eq!(r.name(), "<stdin>");
    let (recs, err, _) = read_all(&mut r);
    assert_eq!(err, None);
    println!("stdin records={}", recs.len());
}

#[test]
fn stdin_is_read_fully() {
    let input = std::fs::File::open(trace(PATHSPIDER.0)).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stdin_child", "--ignored", "--nocapture"])
        .env("LINERATE_STDIN_CHILD", "1")
        .stdin(input)
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("stdin records={}", PATHSPIDER.1)),
        "{stdout}"
    );
}

#[test]
fn copy_through_the_writer_is_byte_identical() {
    for (name, _) in [PATHSPIDER, NDPI] {
        let src = trace(name);
        let mut r = PcapReader::open(&src).unwrap();
        let out = TempPath::new(".pcap");
        let mut w = PcapWriter::create(&out.0, r.link_type(), r.snaplen(), false).unwrap();
        while let Some(rec) = r.next_record() {
            let rec = rec.unwrap();
            w.write(rec.ts_ns, rec.orig_len, rec.data).unwrap();
        }
        w.flush().unwrap();
        assert_eq!(w.count(), r.stats().records);
        let copied = std::fs::read(&out.0).unwrap();
        assert!(copied == r.data_base(), "{name}: copy differs");
    }
}
