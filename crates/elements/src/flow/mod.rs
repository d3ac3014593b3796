//! Flow records: microflow fast path, aggregation and exporters.

pub mod record;

use linerate_runtime::ElementClass;

/// Element classes of this category.
pub const CLASSES: &[ElementClass] = &[];
