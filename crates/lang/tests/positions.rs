//! Reported positions: columns, `#` line directives, libraries.

mod common;
use common::*;

#[test]
fn line_directives_change_reported_positions() {
    let d = errors("Idle -> Discard;\n# 40 \"orig.click\"\nIdle -> Countr;\nIdle -> Bad2;\n# line 7\nIdle -> Bad3;\n# 3 \"\"\nIdle -> Bad4;");
    let locs: Vec<String> = d.0.iter().map(|x| x.loc.to_string()).collect();
    assert_eq!(
        locs,
        [
            "orig.click:40:9",
            "orig.click:41:9",
            "orig.click:7:9",
            "conf.click:3:9"
        ]
    );
    // The snippet is still the physical line.
    assert_eq!(d.0[0].snippet.as_deref(), Some("Idle -> Countr;"));
}

#[test]
fn line_directive_inside_config_is_removed() {
    let c = parse("a :: Print(x,\n# 100 \"gen.click\"\ny) -> Discard;\nIdle -> a;");
    // Like Click, the directive line is dropped but its line end is kept.
    assert_eq!(c.elements[0].config, "x,\n\ny");
    assert_eq!(&*c.connections[1].loc.file, "gen.click");
    assert_eq!(c.connections[1].loc.line, 101);
}

#[test]
fn columns_count_characters_and_tabs_align() {
    let d = errors("\tIdle -> Countr -> Bad;");
    assert_eq!((d.0[0].loc.column, d.0[0].span_len), (10, 6));
    assert_eq!(d.0[1].loc.column, 20);
    assert_eq!(
        d.0[0].to_string(),
        "conf.click:1:10: error: unknown element class 'Countr'\n    1 | \tIdle -> Countr -> Bad;\n      | \t        ^^^^^^\n      = help: did you mean 'Counter'?\n"
    );
    // Non-ASCII text before the error counts as one column per character.
    let d = errors("Print(\"\u{e9}\u{e9}\") -> Countr;");
    assert_eq!(d.0[0].loc.column, 16);
}

#[test]
fn crlf_line_ends() {
    let d = errors("Idle -> Discard;\r\nIdle -> Countr;\r\n");
    assert_eq!(d.0[0].loc.line, 2);
    assert_eq!(d.0[0].snippet.as_deref(), Some("Idle -> Countr;"));
}
