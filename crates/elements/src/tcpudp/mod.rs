//! Click's TCP/UDP elements (`tcpudp`): the NAT rewriters, sharing their
//! flow table and pattern code in `rwcore`.

pub mod ipaddrrewriter;
pub mod iprewriter;
mod rwcore;
pub mod tcprewriter;
pub mod udprewriter;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    ipaddrrewriter::CLASS,
    iprewriter::CLASS,
    tcprewriter::CLASS,
    udprewriter::CLASS,
];
