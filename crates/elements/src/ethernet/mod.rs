//! Click's Ethernet elements: encapsulation, VLAN tags.

pub mod vlandecap;
pub mod vlanencap;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[vlandecap::CLASS, vlanencap::CLASS];
