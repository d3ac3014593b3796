//! Elements that control threads.

pub mod staticthreadsched;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[staticthreadsched::CLASS];
