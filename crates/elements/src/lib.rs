//! linerate's element library, one element per file in a folder per
//! category, as in Click's `elements/` tree.
//!
//! Each file opens with the element's reference documentation (synopsis,
//! ports, arguments, handlers, example); the build script extracts it, the
//! `linerate elements CLASS` command prints it and `docs/elements.md` is
//! generated from it.

/// The reference documentation of the element in `src/<path>.rs`.
macro_rules! element_doc {
    ($path:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/doc/", $path, ".md"))
    };
}

/// `Element::drops` and `Element::diverted` of an element whose output 1,
/// when connected (`$out1`), takes every bad packet it counts (`$bad`, by
/// reason): drops without that output, errors sent there with it
/// (`linerate_runtime::element::drops_or_diverted`). `$this` is `self`.
macro_rules! drops_or_output_1 {
    ($this:ident, $out1:expr, $bad:expr) => {
        fn drops(&$this) -> linerate_runtime::element::Drops {
            linerate_runtime::element::drops_or_diverted($out1, $bad).0
        }

        fn diverted(&$this) -> linerate_runtime::element::Diverted {
            linerate_runtime::element::drops_or_diverted($out1, $bad).1
        }
    };
}

pub mod analysis;
pub mod classification;
pub mod crypto;
pub mod encap;
pub mod ethernet;
pub mod flow;
mod hint;
pub mod ip;
pub mod iproute;
pub mod model;
pub mod parse;
pub mod sched;
pub mod scion;
pub mod standard;
pub mod tables;
pub mod tcpudp;
pub mod threads;
pub mod userlevel;

use linerate_runtime::{ElementClass, Registry};

/// Parse a handler value with Click's argument syntax for `T`.
pub(crate) fn parse_value<T: linerate_args::ArgValue>(s: &str) -> Result<T, String> {
    T::parse_arg(s.trim()).map_err(|e| format!("{e} (expected {})", T::TYPE))
}

/// Every element class in this crate.
pub fn classes() -> Vec<ElementClass> {
    let mut v = Vec::new();
    v.extend_from_slice(analysis::CLASSES);
    v.extend_from_slice(ethernet::CLASSES);
    v.extend_from_slice(flow::CLASSES);
    v.extend_from_slice(ip::CLASSES);
    v.extend_from_slice(classification::CLASSES);
    v.extend_from_slice(model::CLASSES);
    v.extend_from_slice(standard::CLASSES);
    v.extend_from_slice(threads::CLASSES);
    v.extend_from_slice(userlevel::CLASSES);
    v.extend_from_slice(iproute::CLASSES);
    v.extend_from_slice(tcpudp::CLASSES);
    v.extend_from_slice(parse::CLASSES);
    v.extend_from_slice(encap::CLASSES);
    v.extend_from_slice(scion::CLASSES);
    v.extend_from_slice(crypto::CLASSES);
    v.extend_from_slice(tables::CLASSES);
    v.extend_from_slice(sched::CLASSES);
    v
}

/// A registry holding every element class in this crate.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.extend(&classes());
    r
}

/// The element reference in Markdown (the contents of `docs/elements.md`).
pub fn reference_markdown(registry: &Registry) -> String {
    let mut s = String::from(
        "# Element reference\n\nGenerated from each element's source documentation by \
         `linerate elements --markdown`; do not edit by hand.\n\n",
    );
    for c in registry.classes() {
        // Element docs use top-level headings; nest them under the class.
        let mut in_code = false;
        let mut doc = String::new();
        for l in c.doc.trim_end().lines() {
            in_code ^= l.starts_with("```");
            if !in_code && l.starts_with('#') {
                doc.push_str("###");
            }
            doc.push_str(l);
            doc.push('\n');
        }
        s.push_str(&format!(
            "## {}\n\nPorts: `{}`, processing `{}`.\n\n{}\n",
            c.name, c.port_count, c.processing, doc
        ));
    }
    s
}
