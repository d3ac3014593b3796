//! Printing a flattened configuration as Click text or Graphviz DOT.

use std::fmt::Write;

use crate::Config;

fn req_line(kind: &str, value: &str) -> Option<String> {
    match kind {
        "package" => Some(format!("require(package \"{value}\");")),
        "capability" => Some(format!("require({value});")),
        "compact_config" => Some("require(compact_config);".to_string()),
        "provide" => Some(format!("provide({value});")),
        // Library compounds are already expanded.
        _ => None,
    }
}

/// Click text: requirements, one declaration per element, then
/// connections, with chains `a -> b -> c` joined where the middle element
/// has exactly one input and one output connection.
pub(crate) fn to_click(c: &Config) -> String {
    let mut out = String::new();
    let reqs: Vec<String> = c
        .requirements
        .iter()
        .filter_map(|r| req_line(&r.kind, &r.value))
        .collect();
    for r in &reqs {
        out.push_str(r);
        out.push('\n');
    }
    if !reqs.is_empty() {
        out.push('\n');
    }
    for e in &c.elements {
        if e.config.is_empty() {
            let _ = writeln!(out, "{} :: {};", e.name, e.class);
        } else {
            let _ = writeln!(out, "{} :: {}({});", e.name, e.class, e.config);
        }
    }
    if c.connections.is_empty() {
        return out;
    }
    if !c.elements.is_empty() {
        out.push('\n');
    }
    let n = c.elements.len();
    let mut nin = vec![0usize; n];
    let mut out_of: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, k) in c.connections.iter().enumerate() {
        if k.from < n && k.to < n {
            nin[k.to] += 1;
            out_of[k.from].push(i);
        }
    }
    let pass = |v: usize| nin[v] == 1 && out_of[v].len() == 1;
    let name = |i: usize| c.elements.get(i).map_or("?", |e| e.name.as_str());
    let mut printed = vec![false; c.connections.len()];
    for round in 0..2 {
        for i in 0..c.connections.len() {
            let k = &c.connections[i];
            if printed[i] || (round == 0 && k.from < n && pass(k.from)) {
                continue;
            }
            printed[i] = true;
            out.push_str(name(k.from));
            if k.from_port != 0 {
                let _ = write!(out, " [{}]", k.from_port);
            }
            out.push_str(" -> ");
            if k.to_port != 0 {
                let _ = write!(out, "[{}] ", k.to_port);
            }
            out.push_str(name(k.to));
            let mut cur = k.to;
            while cur < n && pass(cur) {
                let j = out_of[cur][0];
                if printed[j] {
                    break;
                }
                printed[j] = true;
                let m = &c.connections[j];
                if m.from_port != 0 {
                    let _ = write!(out, " [{}]", m.from_port);
                }
                out.push_str("\n    -> ");
                if m.to_port != 0 {
                    let _ = write!(out, "[{}] ", m.to_port);
                }
                out.push_str(name(m.to));
                cur = m.to;
            }
            out.push_str(";\n");
        }
    }
    out
}

fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if matches!(ch, '{' | '}' | '|' | '<' | '>' | '"' | '\\') {
            out.push('\\');
        }
        if ch == '\n' {
            out.push_str("\\n");
        } else {
            out.push(ch);
        }
    }
    out
}

/// Graphviz DOT: record nodes with a row of input ports above the name and
/// a row of output ports below; edges join the port fields.
pub(crate) fn to_dot(c: &Config) -> String {
    let n = c.elements.len();
    let mut nin = vec![0usize; n];
    let mut nout = vec![0usize; n];
    for k in &c.connections {
        if k.from < n && k.to < n {
            nout[k.from] = nout[k.from].max(k.from_port + 1);
            nin[k.to] = nin[k.to].max(k.to_port + 1);
        }
    }
    let mut out = String::from("digraph click {\n  node [shape=record, fontname=\"monospace\"];\n");
    let row = |prefix: char, count: usize| -> String {
        (0..count)
            .map(|p| format!("<{prefix}{p}> {p}"))
            .collect::<Vec<_>>()
            .join("|")
    };
    for (i, e) in c.elements.iter().enumerate() {
        let mut parts = Vec::new();
        if nin[i] > 0 {
            parts.push(format!("{{{}}}", row('i', nin[i])));
        }
        parts.push(dot_escape(&format!("{} :: {}", e.name, e.class)));
        if nout[i] > 0 {
            parts.push(format!("{{{}}}", row('o', nout[i])));
        }
        let _ = writeln!(out, "  n{i} [label=\"{{{}}}\"];", parts.join("|"));
    }
    for k in &c.connections {
        let _ = writeln!(
            out,
            "  n{}:o{}:s -> n{}:i{}:n;",
            k.from, k.from_port, k.to, k.to_port
        );
    }
    out.push_str("}\n");
    out
}
