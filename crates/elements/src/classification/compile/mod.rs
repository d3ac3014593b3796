//! The classifier behind IPClassifier, IPFilter and Classifier: Click's
//! pattern languages parsed into expressions ([`expr`], [`parse`],
//! [`pattern`]) and compiled into a decision tree ([`tree`]) whose lookup
//! cost does not grow linearly with the number of rules, with an
//! exact-match decision cache in front of it ([`cache`]). See
//! `docs/classifier.md` for the design and measurements.

pub mod cache;
pub mod expr;
pub mod parse;
pub mod pattern;
pub mod tree;

pub use cache::DecisionCache;
pub use expr::{linear_match, Expr, PacketView};
pub use tree::Classifier;

/// An IPFilter/IPClassifier rule set: one expression and one output (or
/// drop) per rule, compiled.
#[derive(Debug, Clone)]
pub struct IpRules {
    /// The compiled rules.
    pub classifier: Classifier,
    /// Output port for each rule; `None` drops.
    pub outputs: Vec<Option<usize>>,
    /// The rules' text, as given.
    pub text: Vec<String>,
}

/// Parse IPFilter rules (`ACTION PATTERN` each) for an element with
/// `noutputs` outputs; `filter` false parses IPClassifier patterns (rule `i`
/// goes to output `i`). Errors name the pattern number (from 0, as Click)
/// and the character position of the error in it.
pub fn compile_ip_rules(
    rules: &[String],
    noutputs: usize,
    filter: bool,
) -> Result<IpRules, Vec<String>> {
    let mut errs = Vec::new();
    let mut exprs = Vec::new();
    let mut outputs = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        let (out, body, base) = if filter {
            let Some((action, rest)) = parse::split_action(r) else {
                errs.push(format!("empty pattern {i}"));
                continue;
            };
            let out = match action {
                "allow" => {
                    if noutputs == 0 {
                        errs.push(format!(
                            "pattern {i}: 'allow' is meaningless, element has zero outputs"
                        ));
                        continue;
                    }
                    Some(0)
                }
                "deny" | "drop" => None,
                a => match parse::parse_int(a) {
                    Some(n) if (n as usize) < noutputs => Some(n as usize),
                    Some(n) => {
                        errs.push(format!("pattern {i}: slot {n} out of range"));
                        continue;
                    }
                    None => {
                        errs.push(format!("pattern {i}: unknown slot ID '{a}'"));
                        continue;
                    }
                },
            };
            (out, &r[rest..], rest)
        } else {
            (if i < noutputs { Some(i) } else { None }, r.as_str(), 0)
        };
        if body.trim().is_empty() {
            errs.push(format!("empty pattern {i}"));
            continue;
        }
        match parse::parse_pattern(body) {
            Ok(e) => {
                exprs.push(e);
                outputs.push(out);
            }
            Err(e) => errs.push(format!("pattern {i}: position {}: {}", base + e.pos, e.msg)),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(IpRules {
        classifier: Classifier::new(exprs),
        outputs,
        text: rules.to_vec(),
    })
}
