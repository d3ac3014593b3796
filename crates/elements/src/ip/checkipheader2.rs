//! Checks IP headers like CheckIPHeader, without checking the checksum.
//!
//! # Synopsis
//! `CheckIPHeader2([OFFSET, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for valid packets, optional push
//! output 1 for invalid packets (dropped when output 1 is not connected).
//!
//! # Arguments
//! As CheckIPHeader (`OFFSET`, `BADSRC`, `GOODDST`, `INTERFACES`,
//! `VERBOSE`, `DETAILS`); the checksum is never checked.
//!
//! # Handlers
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, only with `DETAILS true`): `COUNT<tab>REASON`
//!   lines, Click's reasons.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> CheckIPHeader2(14) -> Discard;
//! ```
//!
//! # Implementation
//! The same one-pass batch check as CheckIPHeader with the checksum
//! disabled.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `CheckIPHeader2` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckIPHeader2",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/checkipheader2"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    super::checkipheader::make_common(ctx, false).map(|e| Box::new(e) as Box<dyn Element>)
}
