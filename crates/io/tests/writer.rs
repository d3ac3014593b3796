//! The writer: Click ToDump's exact bytes, snaplen handling, nanosecond files.

mod common;

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use common::*;
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter, DEFAULT_SNAPLEN};

/// A sink the test can read back after the writer is done.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

#[cfg(target_endian = "little")]
#[test]
fn file_matches_click_todump_bytes() {
    let f = TempPath::new(".pcap");
    let mut w = PcapWriter::create(&f.0, LinkType::ETHERNET, DEFAULT_SNAPLEN, false).unwrap();
    // 1.5 s + 999 ns (cut to 1 us), a 3-byte packet that was 60 bytes on the wire.
    w.write(1_500_000_999, 60, &[1, 2, 3]).unwrap();
    w.write(4_294_967_295_000_000_000, 4, &[9, 8, 7, 6])
        .unwrap();
    w.flush().unwrap();
    assert_eq!(w.count(), 2);
    assert_eq!(w.snaplen(), 2000);
    let expect: Vec<u8> = [
        // magic, version 2.4, thiszone 0, sigfigs 0, snaplen 2000, link type 1
        &[0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00][..],
        &[0, 0, 0, 0, 0, 0, 0, 0],
        &[0xd0, 0x07, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00],
        // sec 1, usec 500000, caplen 3, len 60
        &[
            0x01, 0, 0, 0, 0x20, 0xa1, 0x07, 0x00, 0x03, 0, 0, 0, 0x3c, 0, 0, 0,
        ],
        &[1, 2, 3],
        &[
            0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x04, 0, 0, 0, 0x04, 0, 0, 0,
        ],
        &[9, 8, 7, 6],
    ]
    .concat();
    assert_eq!(std::fs::read(&f.0).unwrap(), expect);
}

#[test]
fn records_are_cut_to_the_snaplen() {
    let sink = Shared::default();
    let mut w = PcapWriter::new(sink.clone(), LinkType::RAW_DLT12, 4, false).unwrap();
    w.write(0, 10, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    // orig_len below the data length is raised to it.
    w.write(0, 1, &[1, 2]).unwrap();
    w.flush().unwrap();
    let mut r = PcapReader::from_vec("w", sink.bytes()).unwrap();
    assert_eq!((r.snaplen(), r.link_type()), (4, LinkType(12)));
    let (recs, err, _) = read_all(&mut r);
    assert_eq!(err, None);
    assert_eq!(recs[0].data, [1, 2, 3, 4]);
    assert_eq!(recs[0].orig_len, 10);
    assert_eq!(recs[1].data, [1, 2]);
    assert_eq!(recs[1].orig_len, 2);
}

#[test]
fn snaplen_zero_is_unlimited_like_todump() {
    let sink = Shared::default();
    let mut w = PcapWriter::new(sink.clone(), LinkType::ETHERNET, 0, false).unwrap();
    w.write(0, 5000, &[0x5a; 5000]).unwrap();
    w.flush().unwrap();
    let bytes = sink.bytes();
    assert_eq!(bytes[16..20], 0xffff_ffffu32.to_ne_bytes());
    let (recs, _, _) = read_all(&mut PcapReader::from_vec("w", bytes).unwrap());
    assert_eq!(recs[0].data.len(), 5000);
}

#[test]
fn nanosecond_files_keep_nanoseconds() {
    let sink = Shared::default();
    let mut w = PcapWriter::new(sink.clone(), LinkType::IPV4, 2000, true).unwrap();
    w.write(1_700_000_000_123_456_789, 20, &[0x45; 20]).unwrap();
    w.flush().unwrap();
    let bytes = sink.bytes();
    assert_eq!(bytes[0..4], 0xa1b2_3c4du32.to_ne_bytes());
    let mut r = PcapReader::from_vec("w", bytes).unwrap();
    assert!(r.is_nanosecond());
    let (recs, _, _) = read_all(&mut r);
    assert_eq!(recs[0].ts_ns, 1_700_000_000_123_456_789);
    assert_eq!(recs[0].link, 228);
}

#[test]
fn create_reports_the_path_on_failure() {
    let err =
        PcapWriter::create("/nonexistent/dir/out.pcap", LinkType::ETHERNET, 0, false).unwrap_err();
    assert!(
        err.to_string().starts_with("/nonexistent/dir/out.pcap: "),
        "{err}"
    );
}
