//! Reading and writing packet trace files: classic pcap and pcapng.
//!
//! This module is the data source under Click's `FromDump` and the sink under `ToDump`.
//!
//! # Reading
//!
//! [`PcapReader::open`] memory-maps a regular file (`memmap2`, with sequential
//! read-ahead and, on Linux, huge-page advice), or reads it fully into memory when it cannot be mapped (`-` for
//! standard input, pipes, character devices). A file that starts with the gzip magic
//! (`1f 8b`, whatever its name, so `.gz` files included) is decompressed with `flate2`
//! into memory first. [`PcapReader::from_vec`] parses bytes already in memory.
//!
//! Formats understood:
//! - classic pcap, microsecond (`a1b2c3d4`) and nanosecond (`a1b23c4d`) magic, both byte
//!   orders, version 2.x, and the "modified" (Kuznetsov, `a1b2cd34`) variant with its
//!   24-byte record headers that Click's `FromDump` also accepts;
//! - pcapng: section header blocks of both byte orders (several sections in one file,
//!   each with its own byte order and interfaces), interface description blocks (link
//!   type, snaplen, `if_tsresol` with decimal and power-of-two resolutions, `if_tsoffset`),
//!   enhanced packet blocks, simple packet blocks (no timestamp: `ts_ns` is 0) and the
//!   obsolete packet block; every other block type is skipped and counted.
//!
//! Link types are kept as the number the file carries ([`LinkType`]); [`LinkType::kind`]
//! classifies Ethernet (1), raw IP (101, and 12/14 which libpcap maps to it), IPv4 (228),
//! IPv6 (229), Linux cooked capture SLL (113) and SLL2 (276). Each [`Record`] carries the
//! link type of its own interface (pcapng files can mix them).
//!
//! [`PcapReader::next_record`] is a zero-copy cursor: the [`Record`] borrows the packet
//! bytes from the mapping. [`PcapReader::data_base`] exposes the whole mapped file so a
//! caller can keep pointers into it for as long as the reader lives, and
//! [`PcapReader::position`] is the byte offset of the next record (Click's `filepos`).
//!
//! ## Bad input
//!
//! Nothing here panics on file contents, and every step moves forward, so reading always
//! terminates. Opening fails with a [`PcapError`] that names the file (wrong magic, with
//! the bytes found; truncated file header; unknown major version; pcapng without an
//! interface). Once the records start, problems are handled like this (counters in
//! [`ReadStats`], from [`PcapReader::stats`]):
//!
//! | condition | behaviour |
//! | --- | --- |
//! | last record cut short (file ends inside a header or the data) | the records before it are delivered, then one [`RecordError::Truncated`], then the end; `truncated` = 1 |
//! | captured length > 256 KiB (libpcap's `MAXIMUM_SNAPLEN`) | [`RecordError::CaplenTooLarge`] and stop: the file is corrupt; `corrupt` = 1 |
//! | captured length > the file's snaplen | delivered whole and counted in `over_snaplen` |
//! | captured length > original length | data clamped to the original length and the surplus skipped, as Click's `FromDump` does for tcptrace files; counted in `caplen_over_len` |
//! | captured length 0 | delivered as an empty record; counted in `empty` |
//! | pcapng block whose length is under 12, not a multiple of 4, or differs from its trailing copy; packet data that overflows its block; unknown interface id | [`RecordError::BadBlock`] and stop; `corrupt` = 1 |
//!
//! The snaplen rule follows what the two programs we must agree with do: Click's
//! `FromDump` never looks at the snaplen, and libpcap accepts records up to 256 KiB
//! whatever the header's snaplen says (it only cuts its copy to fit its buffer, a limit
//! a memory-mapped reader does not have). So the record is accepted, and counted so a
//! caller can report it. A snaplen of 0 in a file header is read as "no limit".
//! Classic pcap files older than version 2.3 (which had caplen and len swapped) are read
//! as 2.4 files.
//!
//! ## Why a hand-written parser
//!
//! The record loop is the hot path of the `FromDump` benchmark, which must reach 85 % of a
//! bare loop over the mapped file (`bench/src/bin/pcap_floor.rs`). Measured with
//! `tests/compare_pcap_file.rs` (release build, best of 5 passes, on a shared 2-core VM
//! where runs differ by up to 15 %), in ns/record, ranges over several runs:
//!
//! | trace | bare loop | ours (`next_record`) | `pcap-file` 2.0 (`PcapParser`, zero-copy) |
//! | --- | --- | --- | --- |
//! | `gentrace small20m` (20M x 64 B, 1.6 GB), fresh mapping of the cached file | 11.0-15.6 | 12.1-17.5 | 11.1-17.9 |
//! | the same, already in memory (parse only) | 6.4-9.0 | 8.1-9.5 | 8.3-9.9 |
//! | 10,000 records, cache-resident (CPU cost only) | 2.5 | 5.1 | 5.6-6.6 |
//!
//! So speed alone barely separates the two (the loop is bound by memory, and `pcap-file`'s
//! zero-copy parser is within 10 % of ours); what decides is behaviour: `pcap-file` turns
//! into errors records that libpcap, tcpdump and Click all accept: an original length
//! above the snaplen (every capture made with a short snaplen), a captured length above
//! the snaplen or the original length, a microsecond field of 10^6 or more; its pcapng
//! reader is a separate API, without one cursor over classic and pcapng files that gives
//! each record its interface's link type; and it keeps no counters. Ours keeps the
//! common case to one combined, well-predicted test per record, with no byte-order test
//! (one code path per byte order), and moves every unusual case to a cold function.
//!
//! # Writing
//!
//! [`PcapWriter`] writes classic pcap exactly as Click's `ToDump` does: file header in host
//! byte order with magic `a1b2c3d4` (or `a1b23c4d` when nanosecond timestamps are asked
//! for), version 2.4, thiszone 0, sigfigs 0, the snaplen (0 meaning "no limit", written as
//! `0xffffffff` like `ToDump`) and the link type; then 16-byte record headers and the data
//! cut to the snaplen, through a 256 KiB buffer. [`DEFAULT_SNAPLEN`] is `ToDump`'s 2000.

mod error;
mod link;
mod ng;
mod reader;
mod writer;

pub use error::{PcapError, RecordError};
pub use link::{LinkKind, LinkType};
pub use reader::{PcapReader, ReadStats, Record, RecordSink, MAX_CAPLEN};
pub use writer::{PcapWriter, DEFAULT_SNAPLEN};
