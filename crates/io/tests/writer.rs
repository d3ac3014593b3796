//! The writer: Click ToDump's exact bytes, snaplen handling, nanosecond files.

mod common;

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use common::*;
use linerate_io::pcap::{LinkType, PcapReader, PcapWriter, DEFAULT_SNAPLEN};

/// A sink the test can read back after the writer is done: the bytes, and
/// the size of every write.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<(Vec<u8>, Vec<usize>)>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut s = self.0.lock().unwrap();
        s.0.extend_from_slice(buf);
        s.1.push(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().0.clone()
    }
    fn sizes(&self) -> Vec<usize> {
        self.0.lock().unwrap().1.clone()
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

/// Record bytes as Click's ToDump writes them (little-endian host, microseconds).
#[cfg(target_endian = "little")]
fn record(ts_ns: u64, orig_len: u32, data: &[u8]) -> Vec<u8> {
    let sec = (ts_ns / 1_000_000_000) as u32;
    let usec = (ts_ns % 1_000_000_000 / 1000) as u32;
    let len = orig_len.max(data.len() as u32);
    [
        &sec.to_le_bytes()[..],
        &usec.to_le_bytes(),
        &(data.len() as u32).to_le_bytes(),
        &len.to_le_bytes(),
        data,
    ]
    .concat()
}

#[cfg(target_endian = "little")]
#[test]
fn every_length_is_copied_exactly_including_records_larger_than_the_buffer() {
    let sink = Shared::default();
    let mut w = PcapWriter::new(sink.clone(), LinkType::ETHERNET, 0, false).unwrap();
    let mut expect = Vec::new();
    // Lengths around the short-copy cases (16, 32, 64), records longer than
    // the 64 KiB slack behind a chunk (written directly), records that fill
    // the 2 MiB chunk, then one larger than the whole buffer.
    let lengths = (0..=130).chain([4000, 70_000, 200_000, 1_500_000, 900_000, 2_500_000, 3]);
    for (i, n) in lengths.enumerate() {
        let data: Vec<u8> = (0..n).map(|j| (i * 7 + j * 13) as u8).collect();
        let ts = 1_000_000_000 * i as u64 + 1234 * i as u64;
        w.write(ts, n as u32 + 4, &data).unwrap();
        expect.extend(record(ts, n as u32 + 4, &data));
    }
    w.flush().unwrap();
    assert_eq!(w.count(), 138);
    assert_eq!(sink.bytes()[24..], expect[..]);
}

#[cfg(target_endian = "little")]
#[test]
fn write_buffered_stops_at_the_first_record_that_does_not_fit() {
    let sink = Shared::default();
    let mut w = PcapWriter::new(sink.clone(), LinkType::ETHERNET, 100, false).unwrap();
    let mut expect = Vec::new();
    // Batches of records of 0-130 bytes (cut to the 100-byte snaplen) that
    // fill the 2 MiB chunk many times over; what `write_buffered` leaves
    // goes through `write`, as ToDump does.
    let recs: Vec<(u64, u32, Vec<u8>)> = (0..250_000usize)
        .map(|i| {
            let n = i * 37 % 131;
            let data = (0..n).map(|j| (i * 7 + j * 13) as u8).collect();
            (1_000_000_007 * i as u64, n as u32 + (i % 3) as u32, data)
        })
        .collect();
    let (mut total, mut stopped) = (0u64, 0);
    for batch in recs.chunks(64) {
        let (n, bytes) = w.write_buffered(batch.iter().map(|(t, o, d)| (*t, *o, &d[..])));
        assert_eq!(
            bytes,
            batch[..n].iter().map(|r| r.2.len() as u64).sum::<u64>()
        );
        total += n as u64;
        stopped += usize::from(n < batch.len());
        for (t, o, d) in &batch[n..] {
            w.write(*t, *o, d).unwrap();
            total += 1;
        }
        for (t, o, d) in batch {
            // The original length counts the bytes the snaplen cut.
            expect.extend(record(*t, (*o).max(d.len() as u32), &d[..d.len().min(100)]));
        }
    }
    w.flush().unwrap();
    assert!(stopped > 5, "the buffer filled only {stopped} times");
    assert_eq!(total, 250_000);
    assert_eq!(w.count(), 250_000);
    assert_eq!(sink.bytes()[24..], expect[..]);
}

/// A sink that accepts `budget` bytes, then fails until given more.
#[derive(Clone)]
struct Failing(Arc<Mutex<(Vec<u8>, usize)>>);

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut s = self.0.lock().unwrap();
        let n = buf.len().min(s.1);
        if n == 0 {
            return Err(io::Error::other("disk full"));
        }
        s.0.extend_from_slice(&buf[..n]);
        s.1 -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(target_endian = "little")]
#[test]
fn a_failing_sink_fails_records_and_loses_no_buffered_bytes() {
    let sink = Failing(Arc::new(Mutex::new((Vec::new(), 100_000))));
    let mut w = PcapWriter::new(sink.clone(), LinkType::ETHERNET, 0, false).unwrap();
    let data = [0xabu8; 1000];
    let mut ok = 0;
    let mut failed = 0;
    for _ in 0..3000 {
        match w.write(0, 1000, &data) {
            Ok(()) => ok += 1,
            Err(e) => {
                assert_eq!(e.to_string(), "disk full");
                failed += 1;
            }
        }
    }
    // The 2 MiB chunk filled, its first 100,000 bytes went out, the rest
    // stayed; when the chunk filled again, records failed.
    assert!(failed > 0 && ok > 0, "{ok} {failed}");
    assert_eq!(w.count(), ok);
    assert!(w.flush().is_err());
    // Room again: everything accepted reaches the sink once, in order.
    sink.0.lock().unwrap().1 = usize::MAX;
    w.flush().unwrap();
    let bytes = sink.0.lock().unwrap().0.clone();
    let rec = record(0, 1000, &data);
    assert_eq!(bytes.len(), 24 + rec.len() * ok as usize);
    assert!(bytes[24..].chunks(rec.len()).all(|c| c == rec));
}

#[cfg(target_endian = "little")]
#[test]
fn the_file_is_written_in_whole_2_mib_chunks() {
    // A write of 2 MiB at a 2 MiB offset is what a filesystem with large
    // folios caches as one 2 MiB folio (see the writer's `CHUNK`).
    let sink = Shared::default();
    let mut w = PcapWriter::new(sink.clone(), LinkType::ETHERNET, 0, false).unwrap();
    let mut expect = Vec::new();
    for i in 0..20_000usize {
        // 0 to 1,500 bytes, and a 60,000-byte record (within the slack) now and then.
        let n = if i % 997 == 5 { 60_000 } else { i * 131 % 1501 };
        let data: Vec<u8> = (0..n).map(|j| (i + j * 3) as u8).collect();
        let ts = 1_000_000 * i as u64;
        if i % 2 == 0 {
            w.write(ts, n as u32, &data).unwrap();
        } else {
            let (k, _) = w.write_buffered(std::iter::once((ts, n as u32, &data[..])));
            if k == 0 {
                w.write(ts, n as u32, &data).unwrap();
            }
        }
        expect.extend(record(ts, n as u32, &data));
    }
    w.flush().unwrap();
    let sizes = sink.sizes();
    assert_eq!(sink.bytes()[24..], expect[..]);
    assert!(sizes.len() > 5, "{sizes:?}");
    let (last, whole) = sizes.split_last().unwrap();
    assert!(whole.iter().all(|&n| n == 2 << 20), "{sizes:?}");
    assert!(*last <= 2 << 20);
}
