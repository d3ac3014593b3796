//! Variable environments and `$var` substitution in configuration strings
//! (Click's `cp_expand`), and compound-argument matching
//! (`cp_assign_arguments`).

use std::collections::HashSet;
use std::rc::Rc;

/// One variable: name (without `$`), value, and the id of the `define`
/// that introduced it (for the unused-variable warning).
pub(crate) struct Var {
    pub name: String,
    pub value: String,
    pub define_id: Option<usize>,
}

/// A scope of variables. Compound instances get a new environment whose
/// parent is the environment at the compound's definition depth.
pub(crate) struct Env {
    pub vars: Vec<Var>,
    pub parent: Option<Rc<Env>>,
    pub depth: usize,
}

impl Env {
    fn lookup(&self, name: &str) -> Option<&Var> {
        let mut e = Some(self);
        while let Some(env) = e {
            if let Some(v) = env.vars.iter().find(|v| v.name == name) {
                return Some(v);
            }
            e = env.parent.as_deref();
        }
        None
    }

    /// Click's `parent_of`: the nearest environment (this one or an
    /// ancestor) whose depth is below `depth`.
    pub fn parent_below(self: &Rc<Env>, depth: usize) -> Option<Rc<Env>> {
        let mut e = Some(self.clone());
        while let Some(env) = e {
            if env.depth < depth {
                return Some(env);
            }
            e = env.parent.clone();
        }
        None
    }

    /// All variable names visible here.
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut e = Some(self);
        while let Some(env) = e {
            out.extend(env.vars.iter().map(|v| format!("${}", v.name)));
            e = env.parent.as_deref();
        }
        out
    }
}

/// What an expansion found: defines used and undefined variables (byte
/// offset of the `$` in the top-level text, and the name).
#[derive(Default)]
pub(crate) struct ExpandLog {
    pub used: HashSet<usize>,
    pub undefined: Vec<(usize, String)>,
    /// Variables whose value refers to themselves (left unexpanded).
    pub cycles: Vec<(usize, String)>,
    /// Set when the expansion outgrew [`MAX_EXPANSION`] and was cut short.
    pub too_large: bool,
    /// Variables being expanded right now, to detect cycles.
    active: Vec<String>,
}

const MAX_DEPTH: usize = 10;

/// Largest configuration string an expansion may produce. Without a cap,
/// values that each repeat the previous variable grow exponentially.
pub(crate) const MAX_EXPANSION: usize = 1 << 20;

/// Substitutes variables in `config` (Click's `cp_expand`): `$name`,
/// `${name}`, `${name-default}`, `${name[i]}` (the i-th word), and
/// variables inside `$( ... )`. Nothing is substituted inside single
/// quotes; inside double quotes values are escaped. Undefined variables
/// are left as written and logged.
pub(crate) fn expand(config: &str, env: &Env, log: &mut ExpandLog) -> String {
    expand_at(config, env, 0, None, log)
}

fn expand_at(
    config: &str,
    env: &Env,
    depth: usize,
    outer: Option<usize>,
    log: &mut ExpandLog,
) -> String {
    if !config.contains('$') {
        return config.to_string();
    }
    let b = config.as_bytes();
    let n = b.len();
    let mut out = String::new();
    let mut done_upto = 0;
    let mut quote = 0u8;
    let mut s = 0;
    while s < n {
        match b[s] {
            b'\\' if quote == b'"' && s + 1 < n => {
                s += 2;
                continue;
            }
            b'\'' | b'"' => {
                if quote == 0 {
                    quote = b[s];
                } else if quote == b[s] {
                    quote = 0;
                }
            }
            b'/' if quote == 0 && s + 1 < n && b[s + 1] == b'/' => {
                while s < n && b[s] != b'\n' && b[s] != b'\r' {
                    s += 1;
                }
                continue;
            }
            b'/' if quote == 0 && s + 1 < n && b[s + 1] == b'*' => {
                s = config[s + 2..].find("*/").map_or(n, |p| s + 2 + p + 2);
                continue;
            }
            b'$' if s + 1 < n && quote != b'\'' && depth <= MAX_DEPTH => {
                let dollar = s;
                let report_at = outer.unwrap_or(dollar);
                let (vtype, vname, after) = match b[s + 1] {
                    b'{' => match config[s + 2..].find('}') {
                        Some(p) => ('{', &config[s + 2..s + 2 + p], s + 2 + p + 1),
                        None => break,
                    },
                    b'(' => match paren_end(b, s + 2) {
                        Some(e) => ('(', &config[s + 2..e], e + 1),
                        None => break,
                    },
                    c if c.is_ascii_alphanumeric() || c == b'_' => {
                        let mut e = s + 1;
                        while e < n && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                            e += 1;
                        }
                        ('a', &config[s + 1..e], e)
                    }
                    _ => {
                        s += 1;
                        continue;
                    }
                };
                let nested = vname.contains('$');
                let vname_exp = if nested {
                    expand_at(vname, env, depth + 1, Some(report_at), log)
                } else {
                    vname.to_string()
                };
                out.push_str(&config[done_upto..dollar]);
                done_upto = after;
                if out.len() > MAX_EXPANSION || log.too_large {
                    log.too_large = true;
                    return out;
                }
                match lookup(&vname_exp, vtype, env, depth, report_at, log) {
                    Some(text) => {
                        if quote == b'"' {
                            out.push_str(&quote_inner(&text));
                        } else {
                            out.push_str(&text);
                        }
                    }
                    None => {
                        if nested {
                            let (open, close) = if vtype == '(' { ('(', ')') } else { ('{', '}') };
                            out.push('$');
                            out.push(open);
                            out.push_str(&vname_exp);
                            out.push(close);
                        } else {
                            out.push_str(&config[dollar..after]);
                        }
                    }
                }
                s = after;
                continue;
            }
            _ => {}
        }
        s += 1;
    }
    out.push_str(&config[done_upto.min(n)..]);
    out
}

/// End of a `$( ... )` body starting at `s` (position of the `)`).
fn paren_end(b: &[u8], mut s: usize) -> Option<usize> {
    let mut level = 1;
    let mut q = 0u8;
    while s < b.len() {
        match b[s] {
            b'(' if q == 0 => level += 1,
            b')' if q == 0 => {
                level -= 1;
                if level == 0 {
                    return Some(s);
                }
            }
            b'"' | b'\'' => {
                if q == 0 {
                    q = b[s];
                } else if q == b[s] {
                    q = 0;
                }
            }
            b'\\' if q != b'\'' => s += 1,
            _ => {}
        }
        s += 1;
    }
    None
}

fn lookup(
    var: &str,
    vtype: char,
    env: &Env,
    depth: usize,
    report_at: usize,
    log: &mut ExpandLog,
) -> Option<String> {
    if vtype == '(' {
        // `$(...)` belongs to elements such as Script.
        return None;
    }
    let mut name = var;
    let mut index: Option<usize> = None;
    let mut default: Option<&str> = None;
    if vtype == '{' {
        let t = var.trim_start();
        let end = t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        name = &t[..end];
        let mut rest = t[end..].trim_start();
        if let Some(r) = rest.strip_prefix('[') {
            if let Some(close) = r.find(']') {
                if let Ok(i) = r[..close].trim().parse::<usize>() {
                    index = Some(i);
                    rest = r[close + 1..].trim_start();
                }
            }
        }
        if let Some(d) = rest.strip_prefix('-') {
            default = Some(d);
        }
    }
    match env.lookup(name) {
        Some(_) if log.active.iter().any(|a| a == name) => {
            log.cycles.push((report_at, name.to_string()));
            None
        }
        Some(v) => {
            if let Some(id) = v.define_id {
                log.used.insert(id);
            }
            log.active.push(name.to_string());
            let value = expand_at(&v.value, env, depth + 1, Some(report_at), log);
            log.active.pop();
            Some(match index {
                Some(i) => value.split_whitespace().nth(i).unwrap_or("").to_string(),
                None => value,
            })
        }
        None => match default {
            Some(d) => Some(expand_at(d, env, depth + 1, Some(report_at), log)),
            None => {
                if !name.is_empty() {
                    log.undefined.push((report_at, name.to_string()));
                }
                None
            }
        },
    }
}

/// Escapes text for insertion inside a double-quoted string.
fn quote_inner(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Matches compound arguments against formal types (`""` positional,
/// `KEYWORD`, `__REST__`). Returns one value per formal, or `None` when
/// the arguments do not fit. Keyword formals are mandatory; `__REST__`
/// collects every argument not otherwise used, joined by `", "`.
pub(crate) fn assign_arguments(args: &[String], formals: &[String]) -> Option<Vec<String>> {
    let n = formals.len();
    if n == 0 || formals[n - 1].is_empty() {
        return if args.len() == n {
            Some(args.to_vec())
        } else {
            None
        };
    }
    let rest = formals[n - 1] == "__REST__";
    let nvalues = if rest { n - 1 } else { n };
    let npos = formals[..nvalues]
        .iter()
        .take_while(|f| f.is_empty())
        .count();
    if args.len() < npos {
        return None;
    }
    let mut values = vec![String::new(); n];
    let mut used = vec![false; args.len()];
    let mut got = vec![false; nvalues];
    for i in 0..npos {
        values[i] = args[i].clone();
        used[i] = true;
    }
    for j in npos..args.len() {
        let a = args[j].trim_start();
        let end = a.find(char::is_whitespace).unwrap_or(a.len());
        let (word, value) = (&a[..end], a[end..].trim_start());
        match (npos..nvalues).find(|&k| formals[k] == word) {
            Some(k) => {
                values[k] = value.to_string();
                got[k] = true;
                used[j] = true;
            }
            None if rest => {}
            None => return None,
        }
    }
    if got[npos..].iter().any(|g| !g) {
        return None;
    }
    if rest {
        let unused: Vec<&str> = args
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(a, _)| a.as_str())
            .collect();
        values[n - 1] = unused.join(", ");
    }
    Some(values)
}

/// A compound signature as Click prints it, e.g.
/// `Shaped(RATE)[1 input, 1 output]` or `Foo[2 arguments, 1 input, 0 outputs]`.
pub(crate) fn signature(
    name: &str,
    formals: Option<&[String]>,
    nargs: usize,
    ninputs: usize,
    noutputs: usize,
) -> String {
    let mut s = if name.is_empty() {
        "<anonymous>".to_string()
    } else {
        name.to_string()
    };
    if let Some(f) = formals {
        if !f.is_empty() {
            let parts: Vec<&str> = f
                .iter()
                .map(|t| match t.as_str() {
                    "" => "<arg>",
                    "__REST__" => "...",
                    k => k,
                })
                .collect();
            s.push('(');
            s.push_str(&parts.join(", "));
            s.push(')');
        }
    }
    s.push('[');
    if formals.is_none() && nargs > 0 {
        s.push_str(&format!(
            "{nargs} argument{}, ",
            if nargs == 1 { "" } else { "s" }
        ));
    }
    s.push_str(&format!(
        "{ninputs} input{}, {noutputs} output{}]",
        if ninputs == 1 { "" } else { "s" },
        if noutputs == 1 { "" } else { "s" }
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env {
            vars: vars
                .iter()
                .map(|(n, v)| Var {
                    name: n.to_string(),
                    value: v.to_string(),
                    define_id: None,
                })
                .collect(),
            parent: None,
            depth: 0,
        }
    }

    fn ex(s: &str, e: &Env) -> String {
        expand(s, e, &mut ExpandLog::default())
    }

    #[test]
    fn substitutes_forms() {
        let e = env(&[("a", "1"), ("w", "x y z"), ("r", "$a$a")]);
        assert_eq!(ex("$a, ${a}, ${b-9}, ${w[1]}", &e), "1, 1, 9, y");
        assert_eq!(ex("'$a' \"$a\"", &e), "'$a' \"1\"");
        assert_eq!(ex("$r", &e), "11");
        assert_eq!(ex("$(add $a 2) $$", &e), "$(add 1 2) $$");
        assert_eq!(ex("// $a\n$a", &e), "// $a\n1");
        let mut log = ExpandLog::default();
        assert_eq!(expand("x $nope ${n2}", &e, &mut log), "x $nope ${n2}");
        assert_eq!(log.undefined, vec![(2, "nope".into()), (8, "n2".into())]);
    }

    #[test]
    fn quotes_values_in_double_quotes() {
        let e = env(&[("q", "a\"b\\")]);
        assert_eq!(ex("\"$q\"", &e), "\"a\\\"b\\\\\"");
    }

    #[test]
    fn assigns_arguments() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(assign_arguments(&f(&["1"]), &f(&[""])), Some(f(&["1"])));
        assert_eq!(assign_arguments(&f(&[]), &f(&[""])), None);
        assert_eq!(
            assign_arguments(&f(&["x", "RATE 5"]), &f(&["", "RATE"])),
            Some(f(&["x", "5"]))
        );
        assert_eq!(assign_arguments(&f(&["x"]), &f(&["", "RATE"])), None);
        assert_eq!(
            assign_arguments(&f(&["A 1", "b", "c"]), &f(&["A", "__REST__"])),
            Some(f(&["1", "b, c"]))
        );
        assert_eq!(assign_arguments(&f(&["B 1"]), &f(&["A"])), None);
    }

    #[test]
    fn signatures() {
        let f = vec!["".to_string(), "RATE".to_string(), "__REST__".to_string()];
        assert_eq!(
            signature("S", Some(&f), 0, 1, 1),
            "S(<arg>, RATE, ...)[1 input, 1 output]"
        );
        assert_eq!(
            signature("", None, 2, 0, 2),
            "<anonymous>[2 arguments, 0 inputs, 2 outputs]"
        );
    }
}
