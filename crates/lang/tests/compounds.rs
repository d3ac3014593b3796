//! Compound element classes: flattening and naming, formals, overloading,
//! `|| ...`, anonymous compounds, synonyms, non-recursion, scoping.

mod common;
use common::*;

#[test]
fn compound_flattening_and_names() {
    let out = flat(
        "elementclass Shaped { RATE $r | input -> Queue(200) -> BandwidthRatedUnqueue($r) -> output }\n\
         InfiniteSource(LENGTH 60, LIMIT 1000) -> Shaped(RATE 1Mbps) -> Discard;\n\
         RatedSource(RATE 100, LIMIT 100) -> sh :: Shaped(RATE 8kbps) -> Discard;\n",
    );
    assert_eq!(
        out,
        "InfiniteSource@1 :: InfiniteSource(LENGTH 60, LIMIT 1000);\n\
         Discard@3 :: Discard;\n\
         RatedSource@4 :: RatedSource(RATE 100, LIMIT 100);\n\
         Discard@6 :: Discard;\n\
         Shaped@2/Queue@1 :: Queue(200);\n\
         Shaped@2/BandwidthRatedUnqueue@2 :: BandwidthRatedUnqueue(1Mbps);\n\
         sh/Queue@1 :: Queue(200);\n\
         sh/BandwidthRatedUnqueue@2 :: BandwidthRatedUnqueue(8kbps);\n\
         \n\
         InfiniteSource@1 -> Shaped@2/Queue@1\n    -> Shaped@2/BandwidthRatedUnqueue@2\n    -> Discard@3;\n\
         RatedSource@4 -> sh/Queue@1\n    -> sh/BandwidthRatedUnqueue@2\n    -> Discard@6;\n"
    );
}

#[test]
fn nested_compounds_and_named_inner_elements() {
    let c = parse(
        "elementclass In { input -> c :: Counter -> output }\n\
         elementclass Out { input -> i :: In -> q :: Queue -> output }\n\
         Idle -> o :: Out -> Discard;",
    );
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Idle@1", "Discard@3", "o/q", "o/i/c"]);
    assert_eq!(
        conns(&c),
        [
            "Idle@1[0] -> [0]o/i/c",
            "o/q[0] -> [0]Discard@3",
            "o/i/c[0] -> [0]o/q"
        ]
    );
}

#[test]
fn compound_ports_and_implicit_input_output() {
    let c = parse(
        "elementclass Two { [0] -> a :: Counter -> [0]; [1] -> b :: Counter -> [1] }\n\
         s :: RoundRobinSwitch; t :: Two; d0, d1 :: Discard;\n\
         s [0] -> [0] t [0] -> d0; s [1] -> [1] t [1] -> d1;",
    );
    assert_eq!(
        conns(&c),
        [
            "s[0] -> [0]t/a",
            "s[1] -> [0]t/b",
            "t/a[0] -> [0]d0",
            "t/b[0] -> [0]d1"
        ]
    );
}

#[test]
fn formals_positional_keyword_and_rest() {
    let c = parse(
        "elementclass P { $a, KEY $k, __REST__ $r | input -> Print($a $k [$r]) -> output }\n\
         Idle -> P(x, y, KEY kk, z) -> Discard;",
    );
    assert_eq!(c.elements[2].name, "P@2/Print@1");
    assert_eq!(c.elements[2].config, "x kk [y, z]");
}

#[test]
fn overloading_by_ports_and_arguments() {
    let c = parse(
        "elementclass F { input -> Counter -> output || input -> Queue -> output; input [1] -> Discard || $x | input -> Print($x) -> output }\n\
         a :: Idle; f1 :: F; a -> f1 -> Discard;\n\
         t :: Tee; f2 :: F; t -> f2 -> Discard; t [1] -> [1] f2;\n\
         c :: Idle; c -> F(hello) -> Discard;\n",
    );
    let classes: Vec<_> = c
        .elements
        .iter()
        .map(|e| format!("{}:{}", e.name, e.class))
        .collect();
    assert_eq!(
        classes,
        [
            "a:Idle",
            "Discard@3:Discard",
            "t:Tee",
            "Discard@6:Discard",
            "c:Idle",
            "Discard@9:Discard",
            "f1/Counter@1:Counter",
            "f2/Queue@1:Queue",
            "f2/Discard@2:Discard",
            "F@8/Print@1:Print",
        ]
    );
    assert_eq!(c.elements[9].config, "hello");
}

#[test]
fn extension_falls_back_to_primitive() {
    // `|| ...` extends the earlier (here: primitive) Queue.
    let c = parse(
        "elementclass Queue { $cap, $extra | input -> Queue($cap) -> Counter -> output || ... }\n\
         Idle -> Queue(5, yes) -> Discard; Idle -> Queue(7) -> Discard;",
    );
    let classes: Vec<_> = c
        .elements
        .iter()
        .map(|e| format!("{}:{}:{}", e.name, e.class, e.config))
        .collect();
    assert_eq!(
        classes,
        [
            "Idle@1:Idle:",
            "Discard@3:Discard:",
            "Idle@4:Idle:",
            "Queue@5:Queue:7",
            "Discard@6:Discard:",
            "Queue@2/Queue@1:Queue:5",
            "Queue@2/Counter@2:Counter:",
        ]
    );
}

#[test]
fn extension_of_an_earlier_compound() {
    let c = parse(
        "elementclass A { input -> Counter -> output }\n\
         elementclass A { $x | input -> Print($x) -> output || ... }\n\
         Idle -> A(1) -> Discard; Idle -> A -> Discard;",
    );
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Idle@1",
            "Discard@3",
            "Idle@4",
            "Discard@6",
            "A@2/Print@1",
            "A@5/Counter@1"
        ]
    );
}

#[test]
fn non_recursion_uses_earlier_definition() {
    let c = parse("elementclass Counter { input -> Counter -> Print(c) -> output }\nIdle -> Counter -> Discard;");
    let classes: Vec<_> = c
        .elements
        .iter()
        .map(|e| format!("{}:{}", e.name, e.class))
        .collect();
    assert_eq!(
        classes,
        [
            "Idle@1:Idle",
            "Discard@3:Discard",
            "Counter@2/Counter@1:Counter",
            "Counter@2/Print@2:Print"
        ]
    );
}

#[test]
fn anonymous_compounds_inline() {
    let c = parse("Idle -> { input -> Counter -> output } -> Discard; x :: { input -> Queue -> output }; Idle -> x -> Discard;");
    let names: Vec<_> = c.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Idle@1",
            "Discard@3",
            "Idle@5",
            "Discard@6",
            "@2/Counter@1",
            "x/Queue@1"
        ]
    );
}

#[test]
fn synonyms() {
    let c = parse("elementclass Sink Discard; elementclass C { input -> Counter -> output }; elementclass D C;\nIdle -> D -> Sink;");
    let classes: Vec<_> = c
        .elements
        .iter()
        .map(|e| format!("{}:{}", e.name, e.class))
        .collect();
    assert_eq!(
        classes,
        ["Idle@1:Idle", "Sink@3:Discard", "D@2/Counter@1:Counter"]
    );
}

#[test]
fn class_definitions_are_scoped_to_their_compound() {
    let c = parse(
        "elementclass Outer { elementclass Inner { input -> Counter -> output }; input -> Inner -> output }\n\
         Idle -> Outer -> Discard;",
    );
    assert_eq!(c.elements[2].name, "Outer@2/Inner@1/Counter@1");
    assert_eq!(
        messages("elementclass Outer { elementclass Inner { input -> Counter -> output }; input -> Inner -> output }\nIdle -> Inner -> Discard;"),
        ["unknown element class 'Inner'"]
    );
}

#[test]
fn compound_variables_are_lexically_scoped() {
    let c = parse(
        "define($G global)\n\
         elementclass A { $x | define($y [$x]); input -> Print($G $y) -> output }\n\
         elementclass B { $x | input -> A(in-$x) -> output }\n\
         Idle -> B(b) -> Discard;",
    );
    assert_eq!(c.elements[2].name, "B@2/A@1/Print@1");
    assert_eq!(c.elements[2].config, "global [in-b]");
}

#[test]
fn groups_inside_compounds() {
    let c = parse("elementclass G { input -> (input -> Counter -> output) -> output }\nIdle -> g :: G -> Discard;");
    assert_eq!(
        conns(&c),
        [
            "Idle@1[0] -> [0]g/Counter@4",
            "g/Counter@4[0] -> [0]Discard@3"
        ]
    );
}

#[test]
fn compound_without_ports_used_as_source() {
    let c = parse("elementclass Src { Idle -> output }\nSrc -> Discard;");
    assert_eq!(conns(&c), ["Src@1/Idle@1[0] -> [0]Discard@2"]);
}
