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

/// The per-reason counter handler (`truncated`, `not_ip`, ...) of an
/// element counting `linerate_wire::l4::parse`'s rejections in `by_reason`.
pub(crate) fn reason_handler(by_reason: &[u64; 6], name: &str) -> Option<String> {
    linerate_wire::l4::Reason::ALL
        .iter()
        .find(|r| r.name() == name)
        .map(|r| by_reason[*r as usize].to_string())
}

/// The summary's drops of such an element, by reason.
pub(crate) fn reason_drops(by_reason: &[u64; 6]) -> Vec<(&'static str, u64)> {
    linerate_wire::l4::Reason::ALL
        .iter()
        .map(|r| (r.name(), by_reason[*r as usize]))
        .filter(|(_, n)| *n > 0)
        .collect()
}
