//! Click's classification elements: Classifier, IPClassifier and IPFilter,
//! and the rule compiler they share ([`compile`]).

pub mod classifier;
pub mod compile;
pub mod ipclassifier;
pub mod ipfilter;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[classifier::CLASS, ipclassifier::CLASS, ipfilter::CLASS];
