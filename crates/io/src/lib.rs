//! linerate-io: file and device input/output for linerate.
//!
//! - [`pcap`]: pcap and pcapng trace files, the data source and sink of Click's
//!   `FromDump` and `ToDump` elements.
//! - [`udp`]: batched UDP sockets (`recvmmsg`/`sendmmsg`) for live I/O.

pub mod pcap;
pub mod udp;
