//! Errors from opening, reading and writing trace files.

use std::fmt;
use std::io;

/// An error that stops a trace file from being opened or created.
///
/// Every variant names the file (`<stdin>`/`<stdout>` for `-`).
#[derive(Debug)]
pub enum PcapError {
    /// The file could not be opened, mapped, read or written.
    Io {
        /// The file name.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The file starts with a gzip header but does not decompress.
    Gzip {
        /// The file name.
        path: String,
        /// The decompressor's error.
        source: io::Error,
    },
    /// The first four bytes are neither a pcap nor a pcapng (nor a gzip) magic number.
    BadMagic {
        /// The file name.
        path: String,
        /// The bytes found at the start of the file.
        magic: [u8; 4],
    },
    /// The file is shorter than its file header (24 bytes for pcap, the section header
    /// block for pcapng).
    TruncatedHeader {
        /// The file name.
        path: String,
        /// The bytes the header needs.
        needed: u64,
        /// The bytes the file has.
        found: u64,
    },
    /// A classic pcap file with a major version other than 2.
    UnsupportedVersion {
        /// The file name.
        path: String,
        /// Major version from the header.
        major: u16,
        /// Minor version from the header.
        minor: u16,
    },
    /// A pcapng file whose header blocks are malformed, or that describes no interface.
    BadPcapng {
        /// The file name.
        path: String,
        /// Byte offset of the offending block.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PcapError::Io { path, source } => write!(f, "{path}: {source}"),
            PcapError::Gzip { path, source } => {
                write!(f, "{path}: gzip decompression failed: {source}")
            }
            PcapError::BadMagic { path, magic } => write!(
                f,
                "{path}: not a pcap or pcapng file (bad magic number {:02x} {:02x} {:02x} {:02x})",
                magic[0], magic[1], magic[2], magic[3]
            ),
            PcapError::TruncatedHeader {
                path,
                needed,
                found,
            } => write!(
                f,
                "{path}: truncated file header ({found} bytes, header needs {needed})"
            ),
            PcapError::UnsupportedVersion { path, major, minor } => {
                write!(f, "{path}: unsupported pcap version {major}.{minor}")
            }
            PcapError::BadPcapng {
                path,
                offset,
                reason,
            } => write!(f, "{path}: bad pcapng file at byte {offset}: {reason}"),
        }
    }
}

impl std::error::Error for PcapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PcapError::Io { source, .. } | PcapError::Gzip { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An error in the record stream. After returning one, the reader is finished: every
/// later [`crate::pcap::PcapReader::next_record`] call returns `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The file ends inside a record header or its data.
    Truncated {
        /// Byte offset of the cut record.
        offset: u64,
        /// Bytes the record needs from `offset`.
        needed: u64,
        /// Bytes left in the file from `offset`.
        available: u64,
    },
    /// The captured length exceeds [`crate::pcap::MAX_CAPLEN`]: the file is corrupt.
    CaplenTooLarge {
        /// Byte offset of the record.
        offset: u64,
        /// The captured length found.
        caplen: u32,
    },
    /// A malformed pcapng block.
    BadBlock {
        /// Byte offset of the block.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
}

impl RecordError {
    /// Byte offset in the (decompressed) file where the bad record starts.
    pub fn offset(&self) -> u64 {
        match self {
            RecordError::Truncated { offset, .. }
            | RecordError::CaplenTooLarge { offset, .. }
            | RecordError::BadBlock { offset, .. } => *offset,
        }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Truncated {
                offset,
                needed,
                available,
            } => write!(
                f,
                "truncated record at byte {offset}: needs {needed} bytes, file has {available}"
            ),
            RecordError::CaplenTooLarge { offset, caplen } => write!(
                f,
                "bad record at byte {offset}: captured length {caplen} exceeds {}; file is corrupt",
                crate::pcap::MAX_CAPLEN
            ),
            RecordError::BadBlock { offset, reason } => {
                write!(f, "bad pcapng block at byte {offset}: {reason}")
            }
        }
    }
}

impl std::error::Error for RecordError {}
