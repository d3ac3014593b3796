//! linerate-io: file and device input/output for linerate.
//!
//! - [`pcap`]: pcap and pcapng trace files, the data source and sink of Click's
//!   `FromDump` and `ToDump` elements.

pub mod pcap;
