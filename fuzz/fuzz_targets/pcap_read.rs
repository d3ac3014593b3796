//! Fuzz target: the pcap / pcapng trace reader.
//!
//! The input is parsed in memory with `PcapReader::from_vec` (the same parser
//! `PcapReader::open` uses after mapping a file; gzip input is decompressed
//! first) and every record is read to the end, touching each record's bytes.
//! It must never panic and must terminate. The reader's documented promises
//! are checked too: every record moves the position forward, within the
//! data, and nothing follows a record error. A second reader reads the same
//! input through the classic fast path (`read_fast`, in runs of a length
//! taken from the input) with `next_record` for what it leaves: it must read
//! the same records and count them the same way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_io::pcap::PcapReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = PcapReader::from_vec("fuzz.pcap", data.to_vec()) else {
        return;
    };
    let total = reader.data_base().len() as u64;
    let mut last = reader.position();
    let mut failed = false;
    let mut plain = Vec::new();
    while let Some(item) = reader.next_record() {
        assert!(!failed, "a record after an error");
        match item {
            Ok(rec) => {
                let sum = rec.data.iter().fold(0u8, |a, &b| a.wrapping_add(b));
                std::hint::black_box((sum, rec.ts_ns, rec.orig_len, rec.link_type));
                plain.push((rec.data.to_vec(), rec.ts_ns, rec.orig_len));
                let pos = reader.position();
                assert!(pos > last, "no progress: position {pos} after {last}");
                assert!(
                    pos <= total,
                    "position {pos} beyond the data ({total} bytes)"
                );
                last = pos;
            }
            Err(e) => {
                std::hint::black_box((e.offset(), e.to_string()));
                failed = true;
            }
        }
    }
    std::hint::black_box(reader.stats());

    let Ok(mut fast) = PcapReader::from_vec("fuzz.pcap", data.to_vec()) else {
        panic!("the second reader refused what the first accepted");
    };
    let run = usize::from(data.last().copied().unwrap_or(0) % 8) + 1;
    let mut mixed = Vec::new();
    loop {
        let n = fast.read_fast(run, |d, ts, orig| {
            mixed.push((d.to_vec(), ts, orig));
            true
        });
        assert!(n <= run);
        match fast.next_record() {
            Some(Ok(rec)) => mixed.push((rec.data.to_vec(), rec.ts_ns, rec.orig_len)),
            Some(Err(_)) => {}
            None => break,
        }
    }
    assert!(mixed == plain, "the fast path read other records");
    assert_eq!(fast.stats(), reader.stats());
});
