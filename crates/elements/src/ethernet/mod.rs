//! Click's Ethernet elements: encapsulation, address rewriting, VLAN tags, ARP.

pub mod arpquerier;
pub mod arpresponder;
pub mod etherencap;
pub mod etherrewrite;
pub mod ethervlanencap;
pub mod vlandecap;
pub mod vlanencap;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    arpquerier::CLASS,
    arpresponder::CLASS,
    etherencap::CLASS,
    etherrewrite::CLASS,
    ethervlanencap::CLASS,
    vlandecap::CLASS,
    vlanencap::CLASS,
];
