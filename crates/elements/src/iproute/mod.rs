//! Click's IP routing elements (`iproute`): routing tables with Click's
//! route syntax and handlers, shared through [`routetable`].

pub mod lineariplookup;
pub mod radixiplookup;
pub mod routetable;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[lineariplookup::CLASS, radixiplookup::CLASS];
