//! Click's IP elements.

pub mod icmppingencap;
pub mod ipencap;
pub mod udpipencap;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[icmppingencap::CLASS, ipencap::CLASS, udpipencap::CLASS];
