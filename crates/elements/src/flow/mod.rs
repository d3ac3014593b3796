//! Flow records: microflow fast path, aggregation and exporters.

pub mod flowaggregator;
pub mod flowcsv;
pub mod flowjson;
pub mod microflowtable;
pub mod record;

use linerate_runtime::ElementClass;

/// Element classes of this category.
pub const CLASSES: &[ElementClass] = &[
    microflowtable::CLASS,
    flowaggregator::CLASS,
    flowcsv::CLASS,
    flowjson::CLASS,
];
