//! `require` (packages, capabilities, libraries) and `provide`.

mod common;
use common::*;
use linerate_lang::{parse_file, parse_str, ParseOptions};
use std::path::PathBuf;

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-lang-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn requirements_are_recorded() {
    let c = parse("require(package \"mypkg\", userlevel, compact_config); provide(myfeature); require(myfeature)\nIdle -> Discard;");
    let r: Vec<_> = c
        .requirements
        .iter()
        .map(|r| format!("{}={}", r.kind, r.value))
        .collect();
    assert_eq!(
        r,
        [
            "package=mypkg",
            "capability=userlevel",
            "compact_config=",
            "provide=myfeature",
            "capability=myfeature"
        ]
    );
    assert_eq!(c.requirements[1].loc.column, 26);
    assert!(c.to_click().starts_with(
        "require(package \"mypkg\");\nrequire(userlevel);\nrequire(compact_config);\nprovide(myfeature);\nrequire(myfeature);\n\n"
    ));
}

#[test]
fn library_is_loaded_relative_to_the_including_file() {
    let d = temp_dir("lib");
    std::fs::write(
        d.join("lib.click"),
        "elementclass Wrap { input -> Counter -> output }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.click"),
        "require(library lib.click)\nrequire(library \"lib.click\")\nIdle -> Wrap -> Discard;\n",
    )
    .unwrap();
    let cat = catalog();
    let c = parse_file(&d.join("main.click"), &ParseOptions::new(&cat)).unwrap();
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Idle@1", "Discard@3", "Wrap@2/Counter@1"]);
    // Loaded once: one library requirement.
    assert_eq!(
        c.requirements
            .iter()
            .filter(|r| r.kind == "library")
            .count(),
        1
    );
    // The inner element's location is in the library.
    assert!(c.elements[2].loc.file.ends_with("lib.click"));
    assert_eq!(c.elements[2].loc.line, 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn library_is_found_through_clickpath() {
    let d = temp_dir("clickpath");
    std::fs::create_dir_all(d.join("conf")).unwrap();
    std::fs::write(
        d.join("conf/shared.click"),
        "elementclass S { input -> Queue -> output }\n",
    )
    .unwrap();
    let cat = catalog();
    let mut o = ParseOptions::new(&cat);
    o.clickpath = vec![d.join("conf")];
    let c = parse_str(
        "require(library shared.click); Idle -> S -> Discard;",
        "/nonexistent/main.click",
        &o,
    )
    .unwrap();
    assert_eq!(c.elements[2].name, "S@2/Queue@1");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn library_requiring_itself_is_loaded_once() {
    let d = temp_dir("self");
    std::fs::write(
        d.join("a.click"),
        "require(library a.click)\nelementclass A { input -> output }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.click"),
        "require(library a.click); Idle -> A -> Discard;",
    )
    .unwrap();
    let cat = catalog();
    let c = parse_file(&d.join("main.click"), &ParseOptions::new(&cat)).unwrap();
    assert_eq!(conns(&c), ["Idle@1[0] -> [0]Discard@3"]);
    let _ = std::fs::remove_dir_all(&d);
}
