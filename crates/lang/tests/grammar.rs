//! Grammar coverage: declarations, connections, ports, fan-in/out, `=>`,
//! anonymous element naming, groups, comments, strings.

mod common;
use common::*;

#[test]
fn declarations_and_chains() {
    let out = flat(
        "src :: FromDump(in.pcap, STOP true);\n\
         cl  :: Classifier(12/0800, -);\n\
         src -> cl;\n\
         cl [0] -> Strip(14) -> CheckIPHeader -> cnt :: Counter -> Discard;\n\
         cl [1] -> Discard;\n",
    );
    assert_eq!(
        out,
        "src :: FromDump(in.pcap, STOP true);\n\
         cl :: Classifier(12/0800, -);\n\
         Strip@3 :: Strip(14);\n\
         CheckIPHeader@4 :: CheckIPHeader;\n\
         cnt :: Counter;\n\
         Discard@6 :: Discard;\n\
         Discard@7 :: Discard;\n\
         \n\
         src -> cl;\n\
         cl -> Strip@3\n    -> CheckIPHeader@4\n    -> cnt\n    -> Discard@6;\n\
         cl [1] -> Discard@7;\n"
    );
}

#[test]
fn multiple_names_share_one_declaration() {
    let c = parse("a, b, c :: Counter(X 1); a -> b -> c;");
    let names: Vec<_> = c
        .elements
        .iter()
        .map(|e| (e.name.as_str(), e.class.as_str(), e.config.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("a", "Counter", "X 1"),
            ("b", "Counter", "X 1"),
            ("c", "Counter", "X 1")
        ]
    );
    assert_eq!(conns(&c), ["a[0] -> [0]b", "b[0] -> [0]c"]);
}

#[test]
fn anonymous_numbering_counts_all_elements() {
    // Click numbers anonymous elements by their position among all elements.
    let c = parse("x :: Idle; Idle -> Queue -> Discard; y :: Discard; Idle -> y;");
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["x", "Idle@2", "Queue@3", "Discard@4", "y", "Idle@6"]
    );
}

#[test]
fn anonymous_name_clash_is_bumped() {
    // Declared elements called "Idle@1" and "Discard@2" push the anonymous
    // ones to the next free number.
    let c = parse("Idle -> Discard; Idle@1 :: Idle; Idle@1 -> Discard@2 :: Discard;");
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Idle@2", "Discard@3", "Idle@1", "Discard@2"]);
}

#[test]
fn explicit_ports() {
    let c = parse("a :: Tee; b :: Counter; c :: Discard; a[1] -> [0]b -> c; a [2] -> [1] c;");
    assert_eq!(conns(&c), ["a[1] -> [0]b", "a[2] -> [1]c", "b[0] -> [0]c"]);
}

#[test]
fn fan_in_and_fan_out() {
    let c = parse("a, b :: Idle; c, d :: Discard; t :: Tee; a, b -> t -> c, d;");
    assert_eq!(
        conns(&c),
        [
            "a[0] -> [0]t",
            "b[0] -> [0]t",
            "t[0] -> [0]c",
            "t[0] -> [0]d"
        ]
    );
}

#[test]
fn port_lists_ranges_and_many_to_many() {
    let c = parse("cl :: Classifier(a, b, c); p0, p1, p2 :: Counter; src :: Idle; src -> cl; cl [0-2] => p0, p1, p2;");
    assert_eq!(
        conns(&c),
        [
            "cl[0] -> [0]p0",
            "cl[1] -> [0]p1",
            "cl[2] -> [0]p2",
            "src[0] -> [0]cl"
        ]
    );
    let c = parse("t :: Tee; d :: Discard; t [0, 2] => [1, 0] d;");
    assert_eq!(conns(&c), ["t[0] -> [1]d", "t[2] -> [0]d"]);
}

#[test]
fn many_to_many_missing_ports_expand() {
    let c = parse(
        "ipc :: IPClassifier(tcp, udp, -); ipc => Paint(1), Paint(2), Paint(3) -> d :: Discard;",
    );
    assert_eq!(
        conns(&c),
        [
            "ipc[0] -> [0]Paint@2",
            "ipc[1] -> [0]Paint@3",
            "ipc[2] -> [0]Paint@4",
            "Paint@2[0] -> [0]d",
            "Paint@3[0] -> [0]d",
            "Paint@4[0] -> [0]d",
        ]
    );
}

#[test]
fn expandable_port_lists() {
    // `[]` and `[1,]` continue "0, 1, 2 ..." / "1, 2, ..." as needed.
    let c = parse("t :: Tee; a, b :: Discard; t [] => a, b;");
    assert_eq!(conns(&c), ["t[0] -> [0]a", "t[1] -> [0]b"]);
    let c = parse("t :: Tee; a, b :: Discard; t [1,] => a, b;");
    assert_eq!(conns(&c), ["t[1] -> [0]a", "t[2] -> [0]b"]);
}

#[test]
fn repeated_connections_are_deduplicated() {
    let c = parse("a :: Idle; b :: Discard; a -> b; a -> b; a[0] -> [0]b;");
    assert_eq!(conns(&c), ["a[0] -> [0]b"]);
}

#[test]
fn declaration_inside_chain_and_semicolons_optional() {
    let c = parse("Idle -> q :: Queue(10) -> Discard\nq -> Print(x)");
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Idle@1", "q", "Discard@3", "Print@4"]);
    assert_eq!(c.elements[1].config, "10");
    assert_eq!(conns(&c).len(), 3);
}

#[test]
fn element_groups() {
    let c = parse("x :: Idle; x -> (input -> Counter -> output) -> Discard;");
    // The group takes three element numbers (itself, its input and output).
    assert_eq!(flat("x :: Idle; x -> (input -> Counter -> output) -> Discard;"),
        "x :: Idle;\nCounter@5 :: Counter;\nDiscard@6 :: Discard;\n\nx -> Counter@5\n    -> Discard@6;\n");
    assert_eq!(conns(&c).len(), 2);
    // An empty pass-through group.
    let c = parse("x :: Idle; y :: Discard; x -> (->) -> y;");
    assert_eq!(conns(&c), ["x[0] -> [0]y"]);
    // Leading and trailing arrows mean input and output.
    let c = parse("x :: Idle; y :: Discard; x -> ( -> Counter -> ) -> y;");
    assert_eq!(conns(&c), ["x[0] -> [0]Counter@6", "Counter@6[0] -> [0]y"]);
}

#[test]
fn groups_with_several_ports() {
    let c = parse(
        "s :: RoundRobinSwitch; a, b :: Discard;\n\
         s => ( [0] -> Counter -> [0]; [1] -> Queue -> [1] ) => a, b;",
    );
    assert_eq!(
        conns(&c),
        [
            "s[0] -> [0]Counter@7",
            "s[1] -> [0]Queue@8",
            "Counter@7[0] -> [0]a",
            "Queue@8[0] -> [0]b"
        ]
    );
}

#[test]
fn comments_and_strings() {
    let c = parse(
        "// line comment\n/* block\n comment -> x */ a :: Print(\"a ) b\", 'c ( d', /* ) */ e // )\n) -> Discard;",
    );
    assert_eq!(c.elements[0].config, "\"a ) b\", 'c ( d', /* ) */ e // )\n");
    assert_eq!(c.elements.len(), 2);
}

#[test]
fn config_keeps_backslash_angle_blocks() {
    let c = parse("a :: Print(\"x\\<28 29>\", \\<29>) -> Discard;");
    assert_eq!(c.elements[0].config, "\"x\\<28 29>\", \\<29>");
}

#[test]
fn identifiers_with_slashes_and_at() {
    let c = parse("a/b@c :: Idle; a/b@c -> Discard;");
    assert_eq!(c.elements[0].name, "a/b@c");
}

#[test]
fn element_index_and_dot() {
    let c = parse("a :: Tee; b :: Discard; a [1] -> b;");
    assert_eq!(c.element_index("b"), Some(1));
    assert_eq!(c.element_index("zz"), None);
    assert_eq!(
        c.to_dot(),
        "digraph click {\n  node [shape=record, fontname=\"monospace\"];\n\
         \x20 n0 [label=\"{a :: Tee|{<o0> 0|<o1> 1}}\"];\n\
         \x20 n1 [label=\"{{<i0> 0}|b :: Discard}\"];\n\
         \x20 n0:o1:s -> n1:i0:n;\n}\n"
    );
}

#[test]
fn flattened_text_reparses_to_the_same_graph() {
    let text = "src :: Idle; cl :: Classifier(a, -); src -> cl; cl [1] -> Discard; cl -> Strip(14) -> Discard;";
    let a = parse(text);
    let b = parse(&a.to_click());
    assert_eq!(a.to_click(), b.to_click());
    assert_eq!(conns(&a), conns(&b));
}

#[test]
fn locations_of_elements_and_connections() {
    let c = parse("a :: Idle;\n  a -> Discard;");
    assert_eq!((c.elements[0].loc.line, c.elements[0].loc.column), (1, 1));
    assert_eq!((c.elements[1].loc.line, c.elements[1].loc.column), (2, 8));
    assert_eq!(
        (c.connections[0].loc.line, c.connections[0].loc.column),
        (2, 5)
    );
    assert_eq!(&*c.connections[0].loc.file, "conf.click");
}
