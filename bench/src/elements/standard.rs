//! Cases for framework elements that give the table its scale: a no-op, a
//! counter and Click's IP header check.

use super::{traffic, Case};
use std::path::Path;

pub fn cases(_dir: &Path) -> Vec<Case> {
    vec![
        Case::header("Null", "Null", "no-op", |s| traffic::udp4(1024, s)),
        Case::header("Counter", "Counter", "packets and bytes", |s| {
            traffic::udp4(1024, s)
        }),
        Case::header(
            "CheckIPHeader",
            "CheckIPHeader(14)",
            "IPv4 header and checksum",
            |s| traffic::udp4(1024, s),
        ),
    ]
}
