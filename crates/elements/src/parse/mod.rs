//! Parsing and rewriting: the flow-key parser, checksums and the record
//! extractor of the accelerated element library (issue 4).

pub mod extractor;
pub mod ipchecksum;
pub mod l4parser;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[extractor::CLASS, ipchecksum::CLASS, l4parser::CLASS];

/// Reads the `IMPL` keyword shared by the accelerated elements: `fast`
/// (the default) or `reference`. True for `fast`.
pub(crate) fn read_impl(a: &mut linerate_args::Args) -> bool {
    use linerate_args::Word;
    match a.read::<Word>("IMPL") {
        None => true,
        Some(Word(w)) if w == "fast" => true,
        Some(Word(w)) if w == "reference" => false,
        Some(Word(w)) => {
            a.error(format!("IMPL: expected 'fast' or 'reference', not '{w}'"));
            true
        }
    }
}
