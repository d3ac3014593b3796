//! Flow records: microflow fast path, aggregation and exporters.

pub(crate) mod export;
pub mod flowaggregator;
pub mod flowcsv;
pub mod flowexport;
pub mod flowjson;
pub mod ipfixexport;
pub mod microflowtable;
pub mod netflowv9export;
pub mod record;

use linerate_runtime::ElementClass;

/// Element classes of this category.
pub const CLASSES: &[ElementClass] = &[
    flowaggregator::CLASS,
    flowcsv::CLASS,
    flowexport::CLASS,
    flowjson::CLASS,
    ipfixexport::CLASS,
    microflowtable::CLASS,
    netflowv9export::CLASS,
];
