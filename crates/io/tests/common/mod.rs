//! Helpers shared by the integration tests: temporary files and byte builders for
//! classic pcap and pcapng files.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use linerate_io::pcap::{PcapReader, ReadStats, RecordError};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh path in the temporary directory (removed when dropped).
pub struct TempPath(pub PathBuf);

impl TempPath {
    pub fn new(suffix: &str) -> TempPath {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        TempPath(std::env::temp_dir().join(format!(
            "linerate-io-test-{}-{n}{suffix}",
            std::process::id()
        )))
    }

    pub fn with_bytes(suffix: &str, bytes: &[u8]) -> TempPath {
        let t = TempPath::new(suffix);
        std::fs::write(&t.0, bytes).expect("write temp file");
        t
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An owned copy of a record, for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub ts_ns: u64,
    pub orig_len: u32,
    pub data: Vec<u8>,
    pub link: u32,
}

/// Reads everything: the records, the error that ended the reading if any, and the stats.
pub fn read_all(r: &mut PcapReader) -> (Vec<Rec>, Option<RecordError>, ReadStats) {
    let mut recs = Vec::new();
    let mut err = None;
    while let Some(item) = r.next_record() {
        match item {
            Ok(rec) => recs.push(Rec {
                ts_ns: rec.ts_ns,
                orig_len: rec.orig_len,
                data: rec.data.to_vec(),
                link: rec.link_type.0,
            }),
            Err(e) => {
                assert!(err.is_none(), "two errors: {err:?} then {e}");
                err = Some(e);
            }
        }
    }
    // The end is sticky.
    assert!(r.next_record().is_none());
    (recs, err, *r.stats())
}

/// Byte-order-aware writer of 16/32/64-bit words.
#[derive(Clone, Copy)]
pub struct Order(pub bool); // true = big-endian

impl Order {
    pub fn u16(self, v: u16) -> [u8; 2] {
        if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    pub fn u32(self, v: u32) -> [u8; 4] {
        if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    pub fn i64(self, v: i64) -> [u8; 8] {
        if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
}

/// Classic pcap file header.
pub fn pcap_header(o: Order, magic: u32, snaplen: u32, link: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(o.u32(magic));
    v.extend(o.u16(2));
    v.extend(o.u16(4));
    v.extend(o.u32(0));
    v.extend(o.u32(0));
    v.extend(o.u32(snaplen));
    v.extend(o.u32(link));
    v
}

/// Classic pcap record.
pub fn pcap_record(o: Order, sec: u32, frac: u32, orig_len: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(o.u32(sec));
    v.extend(o.u32(frac));
    v.extend(o.u32(data.len() as u32));
    v.extend(o.u32(orig_len));
    v.extend_from_slice(data);
    v
}

/// A pcapng block of type `ty` with `body` padded to 4 bytes, lengths filled in.
pub fn ng_block(o: Order, ty: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded) as u32;
    let mut v = Vec::new();
    v.extend(o.u32(ty));
    v.extend(o.u32(total));
    v.extend_from_slice(body);
    v.resize(8 + padded, 0);
    v.extend(o.u32(total));
    v
}

pub fn ng_shb(o: Order) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(0x1a2b_3c4d));
    body.extend(o.u16(1));
    body.extend(o.u16(0));
    body.extend(o.i64(-1)); // section length unknown
    ng_block(o, 0x0a0d_0d0a, &body)
}

/// Interface description block; `tsresol` and `tsoffset` options when given.
pub fn ng_idb(
    o: Order,
    link: u16,
    snaplen: u32,
    tsresol: Option<u8>,
    tsoffset: Option<i64>,
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u16(link));
    body.extend(o.u16(0));
    body.extend(o.u32(snaplen));
    if let Some(r) = tsresol {
        body.extend(o.u16(9));
        body.extend(o.u16(1));
        body.extend([r, 0, 0, 0]);
    }
    if let Some(off) = tsoffset {
        body.extend(o.u16(14));
        body.extend(o.u16(8));
        body.extend(o.i64(off));
    }
    body.extend(o.u16(0));
    body.extend(o.u16(0));
    ng_block(o, 1, &body)
}

/// Enhanced packet block.
pub fn ng_epb(o: Order, iface: u32, units: u64, orig_len: u32, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(iface));
    body.extend(o.u32((units >> 32) as u32));
    body.extend(o.u32(units as u32));
    body.extend(o.u32(data.len() as u32));
    body.extend(o.u32(orig_len));
    body.extend_from_slice(data);
    ng_block(o, 6, &body)
}

/// Simple packet block.
pub fn ng_spb(o: Order, orig_len: u32, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(orig_len));
    body.extend_from_slice(data);
    ng_block(o, 3, &body)
}

/// Obsolete packet block.
pub fn ng_pb(o: Order, iface: u16, units: u64, orig_len: u32, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u16(iface));
    body.extend(o.u16(0));
    body.extend(o.u32((units >> 32) as u32));
    body.extend(o.u32(units as u32));
    body.extend(o.u32(data.len() as u32));
    body.extend(o.u32(orig_len));
    body.extend_from_slice(data);
    ng_block(o, 2, &body)
}

/// Simple deterministic generator for the property tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}
