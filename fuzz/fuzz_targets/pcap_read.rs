//! Fuzz target: the pcap / pcapng trace reader.
//!
//! The input is parsed in memory with `PcapReader::from_vec` (the same parser
//! `PcapReader::open` uses after mapping a file; gzip input is decompressed
//! first) and every record is read to the end, touching each record's bytes.
//! It must never panic and must terminate. The reader's documented promises
//! are checked too: every record moves the position forward, within the
//! data, and nothing follows a record error.
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
    while let Some(item) = reader.next_record() {
        assert!(!failed, "a record after an error");
        match item {
            Ok(rec) => {
                let sum = rec.data.iter().fold(0u8, |a, &b| a.wrapping_add(b));
                std::hint::black_box((sum, rec.ts_ns, rec.orig_len, rec.link_type));
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
});
