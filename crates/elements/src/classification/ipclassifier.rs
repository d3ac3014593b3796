//! Classifies IP packets by contents with tcpdump-like patterns.
//!
//! # Synopsis
//! `IPClassifier(PATTERN_1, ..., PATTERN_N)`
//!
//! # Ports
//! One push input; N push outputs, one per pattern.
//!
//! # Arguments
//! One PATTERN per output, in IPFilter's language (see IPFilter):
//! host/net/port/proto/`tcp opt`/`icmp type`/`ip ...` primitives, byte
//! tests, `and`/`or`/`not`/`?:`, parentheses, `-` for everything. A packet
//! goes to the output of the first pattern it matches, and is dropped if it
//! matches none. Input packets must have their network header annotation
//! set (CheckIPHeader, MarkIPHeader). The number of patterns must equal the
//! number of outputs.
//!
//! # Handlers
//! - `program` (read): the compiled classifier's shape and the patterns.
//! - `config` (read/write): the patterns; writing replaces them at run time
//!   (same number of patterns).
//! - `cache_size` (read/write), `cache_hits`, `cache_misses` (read): the
//!   decision cache, as IPFilter's. linerate only.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Strip(14) -> MarkIPHeader
//!   -> c :: IPClassifier(10.0.0.0/24 and syn, dst tcp port 8000 or 8080, -);
//! c[0] -> Discard; c[1] -> Discard; c[2] -> Discard;
//! ```
//!
//! # Implementation
//! Shares IPFilter's compiled decision tree and decision cache (see
//! IPFilter and `docs/classifier.md`).

use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `IPClassifier` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPClassifier",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("classification/ipclassifier"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    super::ipfilter::IpClassify::make(ctx, false)
}
