//! `define`, `$X` / `${X}` / `${X-default}` / `${X[i]}` substitution,
//! quoting rules, and command-line overrides.

mod common;
use common::*;
use linerate_lang::Severity;

#[test]
fn define_and_forms_of_substitution() {
    let c = parse(
        "define($OUT out.pcap, $W \"a b c\", $N 3)\n\
         Idle -> ToDump($OUT, ${OUT}, ${NONE-dflt}, ${W[1]}, x$N) -> Discard;",
    );
    assert_eq!(c.elements[1].config, "out.pcap, out.pcap, dflt, b, x3");
}

#[test]
fn no_substitution_inside_single_quotes() {
    let c = parse("define($A 1)\nIdle -> Print('$A', \"$A\", $A) -> Discard;");
    assert_eq!(c.elements[1].config, "'$A', \"1\", 1");
}

#[test]
fn define_order_does_not_matter_and_values_expand() {
    let c = parse("define($B [$A], $A 1)\nIdle -> Print($B) -> Discard;");
    assert_eq!(c.elements[1].config, "[1]");
}

#[test]
fn command_line_overrides_global_define() {
    let text = "define($OUT out.pcap)\nIdle -> ToDump($OUT, $EXTRA);";
    let c = parse_vars(text, &[("OUT", "cli.pcap"), ("EXTRA", "e")]).unwrap();
    assert_eq!(c.elements[1].config, "cli.pcap, e");
    let c = parse_vars("Idle -> ToDump($OUT);", &[("$OUT", "x")]).unwrap();
    assert_eq!(c.elements[1].config, "x");
}

#[test]
fn command_line_does_not_override_compound_formals() {
    let c = parse_vars(
        "elementclass P { $x | input -> Print($x) -> output }\nIdle -> P(inner) -> Discard;",
        &[("x", "cli")],
    )
    .unwrap();
    assert_eq!(c.elements[2].config, "inner");
}

#[test]
fn script_keeps_its_own_variables() {
    let c = parse("Script(set a 1, print $a, print $(add $a 1))");
    assert_eq!(c.elements[0].config, "set a 1, print $a, print $(add $a 1)");
}

#[test]
fn unused_define_is_a_warning() {
    let c = parse("define($USED 1, $UNUSED 2)\nIdle -> Print($USED) -> Discard;");
    assert_eq!(c.warnings.len(), 1);
    let w = &c.warnings[0];
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!(w.message, "variable '$UNUSED' is defined but never used");
    assert_eq!((w.loc.line, w.loc.column), (1, 17));
    let c = parse("elementclass C { define($z 1) input -> output }\nIdle -> C -> Discard;");
    assert_eq!(
        c.warnings[0].message,
        "variable '$z' is defined but never used"
    );
}

#[test]
fn variables_used_only_by_other_variables_count_as_used() {
    let c = parse("define($A 1, $B $A)\nIdle -> Print($B) -> Discard;");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}
