//! Flow records: microflow fast path, aggregation and exporters.

pub(crate) mod export;
pub mod flowexport;
pub mod ipfixexport;
pub mod netflowv9export;
pub mod record;

use linerate_runtime::ElementClass;

/// Element classes of this category.
pub const CLASSES: &[ElementClass] = &[
    flowexport::CLASS,
    ipfixexport::CLASS,
    netflowv9export::CLASS,
];
