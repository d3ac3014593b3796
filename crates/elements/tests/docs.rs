//! docs/elements.md is generated from the elements' source documentation;
//! this test fails when it is out of date. Regenerate with
//! `UPDATE_DOCS=1 cargo test -p linerate-elements --test docs`
//! (or `linerate elements --markdown > docs/elements.md`).

use std::path::Path;

#[test]
fn element_reference_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/elements.md");
    let want = linerate_elements::reference_markdown(&linerate_elements::registry());
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/elements.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/elements.md is out of date: run `UPDATE_DOCS=1 cargo test -p linerate-elements --test docs`");
}

#[test]
fn every_element_documents_its_interface() {
    for c in linerate_elements::registry().classes() {
        for section in [
            "# Synopsis",
            "# Ports",
            "# Arguments",
            "# Handlers",
            "# Example",
        ] {
            assert!(
                c.doc.contains(section),
                "{} lacks a '{section}' section",
                c.name
            );
        }
        assert!(
            c.doc.contains(c.name),
            "{}'s synopsis does not name the class",
            c.name
        );
    }
}

/// The ClickNP optimisation forms the element library's issue asks each
/// of these elements to account for, in its documentation's
/// `# Implementation` section.
const CLICKNP_CLASSES: &[&str] = &[
    "L4Parser",
    "IPChecksum",
    "NVGREEncap",
    "NVGREDecap",
    "VXLANEncap",
    "VXLANDecap",
    "GTPUEncap",
    "GTPUDecap",
    "Extractor",
    "AESCTR",
    "HMACSHA1",
    "HMACSHA256",
    "AESCMAC",
    "ReorderBuffer",
    "CuckooHash",
    "HashTCAM",
    "LPM",
    "FlowCache",
    "SRPrioQueue",
    "RateLimiter",
    "RSS",
];

#[test]
fn clicknp_elements_say_which_optimisations_they_use() {
    let reg = linerate_elements::registry();
    let mut missing = Vec::new();
    for &name in CLICKNP_CLASSES {
        let Some(c) = reg.classes().find(|c| c.name == name) else {
            missing.push(format!("{name}: no such class"));
            continue;
        };
        let Some(at) = c.doc.find("ClickNP's optimisations:") else {
            missing.push(format!("{name}: no \"ClickNP's optimisations:\" paragraph"));
            continue;
        };
        let rest = &c.doc[at..];
        for form in ["struct of arrays", "SIMD", "prefetch", "slow path"] {
            if !rest.contains(form) {
                missing.push(format!("{name}: the paragraph does not cover '{form}'"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
