//! Every diagnostic the front end produces, with its exact text and
//! position, and the rendering of a full diagnostic.

mod common;
use common::*;
use linerate_lang::{parse_file, parse_str, ParseOptions, Severity};

/// `line:column: message` for every diagnostic of a failing configuration.
fn diags(text: &str) -> Vec<String> {
    errors(text)
        .0
        .iter()
        .map(|d| format!("{}:{}: {}", d.loc.line, d.loc.column, d.message))
        .collect()
}

fn help(text: &str) -> Vec<Option<String>> {
    errors(text).0.into_iter().map(|d| d.help).collect()
}

#[test]
fn rendering_like_rustc() {
    let d = errors("src :: Idle;\n\n  src -> Countr -> Discard;\n");
    assert_eq!(d.error_count(), 1);
    assert_eq!(
        d.to_string(),
        "conf.click:3:10: error: unknown element class 'Countr'\n\
         \x20   3 | \x20 src -> Countr -> Discard;\n\
         \x20     | \x20        ^^^^^^\n\
         \x20     = help: did you mean 'Counter'?\n"
    );
}

#[test]
fn all_errors_are_reported_not_only_the_first() {
    assert_eq!(
        diags("a :: Countr;\nb :: Discardd;\na -> c;\nIdle -> Discard;"),
        [
            "1:6: unknown element class 'Countr'",
            "2:6: unknown element class 'Discardd'",
            "3:6: undeclared element 'c'",
        ]
    );
}

#[test]
fn lexical_errors() {
    assert_eq!(
        diags("Idle -> Discard; /* never closed"),
        ["1:18: unterminated '/*' comment"]
    );
    assert_eq!(
        diags("#bogus\nIdle -> Discard;"),
        ["1:1: unknown preprocessor directive"]
    );
    assert_eq!(diags("$x"), ["1:1: syntax error: unexpected '$x'"]);
    assert_eq!(
        diags("Idle -> Discard; %"),
        ["1:18: syntax error: unexpected '%'"]
    );
}

#[test]
fn statement_structure_errors() {
    assert_eq!(
        diags("}"),
        ["1:1: unexpected '}' outside a compound element class"]
    );
    assert_eq!(
        diags("Idle -> Discard; ||"),
        ["1:18: unexpected '||' outside a compound element class"]
    );
    assert_eq!(diags("Idle -> Discard; )"), ["1:18: unmatched ')'"]);
    assert_eq!(
        diags("( Idle -> Discard }"),
        [
            "1:19: expected ')' to close element group, found '}'",
            "1:19: unexpected '}' outside a compound element class",
        ]
    );
    assert_eq!(
        diags("x :: Idle; x -> (Idle -> Discard"),
        [
            "1:17: unclosed '(': element group is never closed",
            "1:14: element group has no input 0",
        ]
    );
    assert_eq!(
        diags("elementclass C { input -> output"),
        ["1:16: unclosed '{': compound element class is never closed"]
    );
}

#[test]
fn connection_errors() {
    assert_eq!(
        diags("a :: Idle :: Discard;"),
        ["1:11: expected '->' or ';' after element, found '::'"]
    );
    assert_eq!(
        diags("a :: Idle; a -> Discard ,, Idle"),
        ["1:26: expected element after ',', found ','"]
    );
    assert_eq!(
        diags("Idle -> ;"),
        ["1:9: expected element after '->', found ';'"]
    );
    assert_eq!(
        diags("Idle -> Discard =>"),
        ["1:19: expected element after '=>', found end of file"]
    );
    assert_eq!(diags("-> Idle;"), ["1:1: expected element, found '->'"]);
    assert_eq!(
        help("-> Idle;"),
        [Some("implicit 'input'/'output' connections are only allowed inside compound classes and groups".to_string())]
    );
    assert_eq!(
        diags("src :: Idle; [0] ;"),
        ["1:18: stranded port list: expected element after ']', found ';'"]
    );
    assert_eq!(
        diags("Idle -> Discard; Idle -> Queue )"),
        ["1:32: unmatched ')'"]
    );
    assert_eq!(
        diags("Idle -> Queue % Discard;"),
        ["1:15: expected '->' or ';' after element, found '%'"]
    );
    assert_eq!(
        diags("[0] a :: Idle; a -> Discard;"),
        ["1:5: input ports ignored at start of chain"]
    );
    assert_eq!(
        diags("a :: Idle [0];"),
        ["1:1: output ports ignored at end of chain"]
    );
    assert_eq!(
        diags("elementclass C { input -> [0], Counter -> Discard }"),
        [
            "1:40: implicit ports used in the middle of a chain",
            "1:40: 'output' may only be used as a connection destination in compound element class 'C'",
        ]
    );
}

#[test]
fn declaration_errors() {
    assert_eq!(
        diags("a :: Idle; a :: Idle;"),
        ["1:12: redeclaration of element 'a'"]
    );
    assert_eq!(
        help("a :: Idle; a :: Idle;"),
        [Some("'a' was first declared at conf.click:1:1".to_string())]
    );
    assert_eq!(
        diags("elementclass C { input :: Idle }"),
        ["1:18: redeclaration of element 'input'"]
    );
    assert_eq!(
        help("elementclass C { input :: Idle }"),
        [Some("'input' is a pseudoelement here".to_string())]
    );
    assert_eq!(
        diags("Counter :: Counter;"),
        ["1:1: class 'Counter' used as element name"]
    );
    assert_eq!(
        diags("x :: Countr;"),
        ["1:6: unknown element class 'Countr'"]
    );
    assert_eq!(
        help("x :: Countr;"),
        [Some("did you mean 'Counter'?".to_string())]
    );
    assert_eq!(
        diags("x :: Zzzzzzzz;"),
        ["1:6: unknown element class 'Zzzzzzzz'"]
    );
    assert_eq!(help("x :: Zzzzzzzz;"), [None]);
    assert_eq!(
        diags("Idle -> Countr(1) -> Countr(2);"),
        ["1:9: unknown element class 'Countr'"]
    );
    assert_eq!(
        diags("src :: Idle; src -> sr;"),
        ["1:21: undeclared element 'sr'"]
    );
    assert_eq!(
        help("src :: Idle; src -> sr;"),
        [Some("did you mean 'src'?".to_string())]
    );
    assert_eq!(
        help("Idle -> queue;"),
        [Some("did you mean 'Queue'?".to_string())]
    );
    assert_eq!(
        help("Idle -> zork;"),
        [Some("declare it first, e.g. 'zork :: Class'".to_string())]
    );
    assert_eq!(
        diags("a :: Idle ::"),
        ["1:11: expected '->' or ';' after element, found '::'"]
    );
    assert_eq!(
        diags("a :: ;"),
        ["1:6: missing element class after '::', found ';'"]
    );
    assert_eq!(
        diags("a :: Idle; a(1) -> Discard;"),
        ["1:13: configuration string ignored on element reference 'a'"]
    );
    assert_eq!(
        diags("Idle -> Discard("),
        ["1:16: unclosed '(': configuration string runs to end of file"]
    );
    assert_eq!(
        diags("1 :: Idle; 1 -> Discard;"),
        ["1:1: element name '1' has an all-digit component"]
    );
    assert_eq!(
        diags("a/2 :: Idle; a/2 -> Discard;"),
        ["1:1: element name 'a/2' has an all-digit component"]
    );
}

#[test]
fn port_errors() {
    assert_eq!(
        diags("t :: Tee; t [70000] -> Discard;"),
        ["1:14: port number '70000' out of range (0 to 65535)"]
    );
    assert_eq!(
        diags("t :: Tee; t [x] -> Discard;"),
        ["1:14: port number should be an integer, found 'x'"]
    );
    assert_eq!(
        diags("t :: Tee; t [3-1] -> Discard;"),
        ["1:16: bad port range '3-1'"]
    );
    assert_eq!(
        diags("t :: Tee; t [1-] -> Discard;"),
        ["1:16: expected port number after '-', found ']'"]
    );
    assert_eq!(
        diags("t :: Tee; t [0-65535, 1-5] -> Discard;"),
        ["1:23: too many ports in port list"]
    );
    assert_eq!(
        diags("t :: Tee; t [1 2] -> Discard;"),
        ["1:16: expected ',' or ']' in port list, found '2'"]
    );
    assert_eq!(
        diags("t :: Tee; t [->] Discard;"),
        ["1:14: expected port number, found '->'"]
    );
}

#[test]
fn many_to_many_errors() {
    assert_eq!(
        diags("t :: Tee; d :: Discard; t [] => [] d;"),
        ["1:30: at most one expandable port allowed per connection"]
    );
    assert_eq!(
        diags("a, b :: Tee; c, d :: Discard; a, b -> c, d;"),
        ["1:36: syntax error: many-to-many connections require '=>'"]
    );
    assert_eq!(
        diags("t :: Tee; a, b :: Discard; t [0, 1, 2] => a, b;"),
        ["1:40: connection mismatch: 3 outputs connected to 2 inputs"]
    );
    assert_eq!(
        diags("t :: Tee; a, b :: Discard; t [0, 1, 2,] => a, b;"),
        ["1:41: connection mismatch: 3 or more outputs connected to 2 inputs"]
    );
    assert_eq!(
        diags("t :: Tee; d :: Discard; t [0, 1] => [0, 1, 2,] d;"),
        ["1:34: connection mismatch: 2 outputs connected to 3 or more inputs"]
    );
}

#[test]
fn compound_class_errors() {
    assert_eq!(
        diags("elementclass A { ... }"),
        [
            "1:18: '...' should occur last, after one or more compounds",
            "1:18: cannot extend unknown element class 'A'",
        ]
    );
    assert_eq!(
        diags("elementclass Nope { input -> output || ... }"),
        ["1:40: cannot extend unknown element class 'Nope'"]
    );
    assert_eq!(
        diags("elementclass Queue { input -> output || ... x }"),
        ["1:45: expected '}' after '...', found 'x'"]
    );
    assert_eq!(
        diags("elementclass C { input -> output -> Idle }"),
        ["1:34: 'output' may only be used as a connection destination in compound element class 'C'"]
    );
    assert_eq!(
        diags("elementclass C { input -> Counter -> output; Idle -> input }"),
        ["1:51: 'input' may only be used as a connection source in compound element class 'C'"]
    );
    assert_eq!(
        diags("elementclass C { input [1] -> Counter -> output }"),
        ["1:16: input 0 of compound element class 'C' is missing"]
    );
    assert_eq!(
        diags("Idle -> { input -> Counter -> [1] output } -> Discard;"),
        ["1:9: output 0 of anonymous compound element class is missing"]
    );
    assert_eq!(
        diags("Idle -> ( input -> output -> Counter ) -> Discard;"),
        ["1:27: 'output' may only be used as a connection destination in element group"]
    );
    assert_eq!(
        diags("elementclass C { $a, KEY }"),
        [
            "1:26: expected variable after keyword 'KEY', found '}'",
            "1:22: unknown element class 'KEY'"
        ]
    );
    assert_eq!(
        diags("elementclass C { $a, ; input -> output }"),
        ["1:22: expected variable, found ';'"]
    );
    assert_eq!(
        diags("elementclass C { $a $b | input -> output }"),
        [
            "1:21: expected ',' or '|' after compound parameter, found '$b'",
            "1:21: syntax error: unexpected '$b'",
            "1:24: syntax error: unexpected '|'",
        ]
    );
    assert_eq!(
        diags("elementclass C { $a, $a | input -> output }"),
        ["1:22: variable '$a' defined twice in the same scope"]
    );
    assert_eq!(
        diags("elementclass C { K $a, K $b | input -> output }"),
        ["1:26: repeated keyword parameter 'K' in compound element class"]
    );
    assert_eq!(
        diags("elementclass C { K $a, $b | input -> output }"),
        ["1:24: compound element parameters out of order"]
    );
    assert_eq!(
        diags("elementclass ;"),
        [
            "1:14: expected element class name after 'elementclass', found ';'",
            "1:14: expected '{' or a class name after 'elementclass ', found ';'",
        ]
    );
    assert_eq!(
        diags("elementclass C ;"),
        ["1:16: expected '{' or a class name after 'elementclass C', found ';'"]
    );
    assert_eq!(
        diags("elementclass C Countr;"),
        ["1:16: unknown element class 'Countr'"]
    );
}

#[test]
fn nesting_limit() {
    let deep = format!("Idle -> {}{} -> Discard;", "(".repeat(40), ")".repeat(40));
    let d = diags(&deep);
    assert_eq!(
        d[0],
        "1:41: element groups and compound classes nested too deeply (limit 32)"
    );
    let deep = format!("{}{}", "elementclass A { ".repeat(40), "}".repeat(40));
    let d = diags(&deep);
    assert_eq!(
        d[0],
        "1:560: element groups and compound classes nested too deeply (limit 32)"
    );
}

#[test]
fn overload_and_instantiation_errors() {
    let text = "elementclass C { input -> Counter -> output || $x | input -> Print($x) -> output }\nIdle -> C(1, 2) -> Discard;";
    assert_eq!(
        diags(text),
        ["2:9: no match for 'C[2 arguments, 1 input, 1 output]'"]
    );
    assert_eq!(
        help(text),
        [Some("candidates are: C[1 input, 1 output] (at conf.click:1:16); C(<arg>)[1 input, 1 output] (at conf.click:1:16)".to_string())]
    );
    assert_eq!(
        diags("elementclass C { $x | -> Counter -> }\nIdle -> C -> Discard;"),
        ["2:9: no match for 'C[1 input, 1 output]'"]
    );
    assert_eq!(
        diags("elementclass C { input -> c :: Counter -> output }\nc/c :: Idle; c :: C; Idle -> c -> Discard;"),
        ["2:14: redeclaration of element 'c/c'"]
    );
    assert_eq!(
        diags("elementclass C { input -> output }\nc/input :: Idle; c :: C; Idle -> c -> Discard;"),
        ["2:18: redeclaration of element 'c/input'"]
    );
    assert_eq!(
        diags("elementclass C { input -> Counter -> output }\nIdle -> [1] C -> Discard;"),
        ["2:6: compound element 'C@2' has no input 1"]
    );
    assert_eq!(
        diags("elementclass C { input -> Counter -> output }\nc :: C; Idle -> c [2] -> Discard;"),
        ["2:23: compound element 'c' has no output 2"]
    );
    assert_eq!(
        diags("x :: Idle; x -> (input -> Counter -> output) [1] -> Discard;"),
        ["1:50: element group has no output 1"]
    );
}

#[test]
fn variable_errors() {
    assert_eq!(
        diags("Idle -> Print($UNDEF, ${OUTT}) -> Discard;"),
        [
            "1:15: undefined variable '$UNDEF'",
            "1:23: undefined variable '$OUTT'"
        ]
    );
    assert_eq!(
        help("Idle -> Print($UNDEF) -> Discard;"),
        [Some(
            "define it with 'define($UNDEF VALUE)' or on the command line as 'UNDEF=VALUE'"
                .to_string()
        )]
    );
    let d = errors("define($OUT 1) Idle -> Print($OUTT) -> Discard;");
    assert_eq!(d.0[0].message, "undefined variable '$OUTT'");
    assert_eq!(d.0[0].help.as_deref(), Some("did you mean '$OUT'?"));
    // The warning comes along with the errors.
    assert_eq!(d.0[1].severity, Severity::Warning);
    assert_eq!(d.0[1].message, "variable '$OUT' is defined but never used");
    assert_eq!(
        diags("elementclass C { $x | input -> Print($y) -> output }\nIdle -> C(1) -> Discard;"),
        ["1:38: undefined variable '$y'"]
    );
    assert_eq!(
        diags("define $x"),
        ["1:8: expected '(' after 'define', found '$x'"]
    );
    assert_eq!(
        diags("define(x 1, $ 2, $a-b 3)"),
        [
            "1:8: bad 'define' declaration: 'x' is not a variable",
            "1:13: bad 'define' declaration: '$' is not a variable",
            "1:18: bad 'define' declaration: '$a-b' is not a variable",
        ]
    );
    assert_eq!(
        diags("define($a 1, $a 2) Print($a);"),
        ["1:14: variable '$a' defined twice in the same scope"]
    );
}

#[test]
fn requirement_errors() {
    assert_eq!(
        diags("require(package a b, 'x y', library)"),
        [
            "1:9: bad requirement 'package a b'",
            "1:22: bad requirement ''x y''",
            "1:29: bad requirement 'library'",
        ]
    );
    assert_eq!(diags("provide(a b)"), ["1:9: bad 'provide' argument 'a b'"]);
    assert_eq!(
        diags("require(nonexistent)"),
        ["1:9: requirement 'nonexistent' is not available"]
    );
    assert_eq!(
        diags("require nonexistent"),
        ["1:9: expected '(' after 'require', found 'nonexistent'"]
    );
    assert_eq!(
        diags("elementclass C { require(library x.click) input -> output }"),
        ["1:26: 'require(library ...)' must be used at file scope"]
    );
    assert_eq!(
        diags("require(library does-not-exist.click)"),
        ["1:9: library 'does-not-exist.click' not found"]
    );
    assert_eq!(
        help("require(library nope.click)"),
        [Some("searched: ./nope.click".to_string())]
    );
}

#[test]
fn library_errors() {
    let d = std::env::temp_dir().join(format!("linerate-lang-liberr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..20 {
        std::fs::write(
            d.join(format!("l{i}.click")),
            format!("require(library l{}.click)\n", i + 1),
        )
        .unwrap();
    }
    std::fs::write(
        d.join("bad.click"),
        "elementclass B { input -> Countr -> output }\n",
    )
    .unwrap();
    let cat = catalog();
    let o = ParseOptions::new(&cat);
    let main = d.join("main.click");
    let e = parse_str("require(library l0.click)", main.to_str().unwrap(), &o).unwrap_err();
    assert_eq!(e.0.len(), 1);
    assert_eq!(e.0[0].message, "libraries nested too deeply (limit 16)");
    assert!(e.0[0].loc.file.ends_with("l15.click"));
    // Errors inside a library point into the library.
    let e = parse_str("require(library bad.click)", main.to_str().unwrap(), &o).unwrap_err();
    assert_eq!(e.0[0].message, "unknown element class 'Countr'");
    assert!(e.0[0].loc.file.ends_with("bad.click"));
    assert_eq!((e.0[0].loc.line, e.0[0].loc.column), (1, 27));
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(target_os = "linux")]
#[test]
fn unreadable_library() {
    // /proc/self/mem is a regular file whose first page cannot be read.
    let m = messages("require(library /proc/self/mem)");
    assert_eq!(m.len(), 1);
    assert!(
        m[0].starts_with("cannot read library '/proc/self/mem': "),
        "{m:?}"
    );
}

#[test]
fn unreadable_file() {
    let cat = catalog();
    let e = parse_file(
        std::path::Path::new("/nonexistent/x.click"),
        &ParseOptions::new(&cat),
    )
    .unwrap_err();
    assert_eq!(e.0.len(), 1);
    assert!(e.0[0]
        .message
        .starts_with("cannot read '/nonexistent/x.click': "));
    assert_eq!(e.0[0].loc.to_string(), "/nonexistent/x.click:1:1");
}

#[test]
fn too_many_elements() {
    let mut text = String::from("elementclass A0 { input -> Counter -> output }\n");
    for i in 1..=18 {
        text.push_str(&format!(
            "elementclass A{i} {{ input -> A{p} -> A{p} -> output }}\n",
            p = i - 1
        ));
    }
    text.push_str("Idle -> A18 -> Discard;");
    let m = messages(&text);
    assert_eq!(
        m,
        ["configuration too large: more than 200000 elements after flattening"]
    );
}

#[test]
fn too_many_connections() {
    let a: Vec<String> = (0..1001).map(|i| format!("a{i}")).collect();
    let b: Vec<String> = (0..1000).map(|i| format!("b{i}")).collect();
    let text = format!(
        "{} :: Idle; {} :: Discard; {} -> (->) -> {};",
        a.join(", "),
        b.join(", "),
        a.join(", "),
        b.join(", ")
    );
    assert_eq!(
        messages(&text),
        ["configuration too large: more than 1000000 connections after flattening"]
    );
}

#[test]
fn warnings() {
    let c = parse("elementclass C { input -> a :: Counter; a -> Discard; -> Idle -> output }\nIdle -> C -> Discard;");
    let w: Vec<_> = c
        .warnings
        .iter()
        .map(|w| format!("{}:{}: {}", w.loc.line, w.loc.column, w.message))
        .collect();
    assert_eq!(
        w,
        ["1:55: suggest 'input ->' or '[0] ->' to start connection"]
    );
    assert_eq!(c.warnings[0].severity, Severity::Warning);
    assert!(c.warnings[0]
        .to_string()
        .starts_with("conf.click:1:55: warning: suggest"));
}
