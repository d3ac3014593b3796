//! Flattening: instantiating compound classes (choosing among overloads),
//! substituting variables, naming inner elements `outer/inner`, and
//! resolving connections through compound ports and element groups.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use linerate_args::split_args;

use crate::diag::closest;
use crate::expand::{assign_arguments, expand, signature, Env, ExpandLog, Var};
use crate::parser::{deanonymize, ClassRef, CompoundDef, EKind, Parser, SConn, Scope};
use crate::source::Pos;
use crate::{Connection, ElementDecl};

/// Most elements a flattened configuration may have.
const MAX_ELEMENTS: usize = 200_000;
/// Most connections a flattened configuration may have.
const MAX_CONNECTIONS: usize = 1_000_000;
/// Most tunnel ports visited while resolving connections.
const WORK_BUDGET: usize = 20_000_000;

enum FKind {
    Tunnel,
    Pending(ClassRef),
    Real(String),
    Error,
}

struct FElem {
    name: String,
    kind: FKind,
    config: String,
    config_pos: Option<Pos>,
    pos: Pos,
    len: usize,
}

/// The outside of a compound instance or element group: what to call it
/// and how many ports it has.
struct Outer {
    what: String,
    nin: usize,
    nout: usize,
}

type Ends = Rc<Vec<(usize, usize)>>;

struct Flat<'p, 'a> {
    p: &'p mut Parser<'a>,
    compounds: Vec<Rc<CompoundDef>>,
    elems: Vec<FElem>,
    map: HashMap<String, usize>,
    conns: Vec<SConn>,
    nin: Vec<usize>,
    nout: Vec<usize>,
    sink_src: HashMap<usize, usize>,
    outer: HashMap<usize, Outer>,
    used: HashSet<usize>,
    instantiated: HashSet<usize>,
    too_big: bool,
    by_from: HashMap<(usize, usize), Vec<usize>>,
    memo: HashMap<(usize, usize), Ends>,
    budget: usize,
    reported: HashSet<(usize, usize, bool)>,
}

/// Flattens the parsed file scope. Errors go to the parser's diagnostics.
pub(crate) fn flatten(
    p: &mut Parser<'_>,
    mut top: Scope,
    vars: &[(String, String)],
) -> (Vec<ElementDecl>, Vec<Connection>) {
    deanonymize(&mut top);
    let compounds: Vec<Rc<CompoundDef>> = p.compounds.drain(..).map(Rc::new).collect();
    let mut f = Flat {
        p,
        compounds,
        elems: Vec::new(),
        map: HashMap::new(),
        conns: Vec::new(),
        nin: Vec::new(),
        nout: Vec::new(),
        sink_src: HashMap::new(),
        outer: HashMap::new(),
        used: HashSet::new(),
        instantiated: HashSet::new(),
        too_big: false,
        by_from: HashMap::new(),
        memo: HashMap::new(),
        budget: WORK_BUDGET,
        reported: HashSet::new(),
    };
    // Global variables: the file's defines, overridden by the command line.
    let mut genv = Env {
        vars: top
            .vars
            .iter()
            .map(|v| Var {
                name: v.name.clone(),
                value: v.value.clone(),
                define_id: Some(v.id),
            })
            .collect(),
        parent: None,
        depth: 0,
    };
    for (k, v) in vars {
        let k = k.strip_prefix('$').unwrap_or(k);
        match genv.vars.iter_mut().find(|x| x.name == k) {
            Some(x) => x.value = v.clone(),
            None => genv.vars.push(Var {
                name: k.to_string(),
                value: v.clone(),
                define_id: None,
            }),
        }
    }
    let genv = Rc::new(genv);
    let group_members: HashSet<usize> = top.groups.iter().flat_map(|g| [g.g, g.gi, g.go]).collect();
    let mut idx = Vec::with_capacity(top.elems.len());
    for (i, e) in top.elems.iter().enumerate() {
        idx.push(f.add(e.name.clone(), &e.kind, e, !group_members.contains(&i)));
    }
    f.copy_body(&top, &idx, "element group");
    let initial = f.elems.len();
    for i in 0..initial {
        f.expand_elem(i, &genv);
    }
    f.unused_defines(&top);
    f.finish()
}

impl Flat<'_, '_> {
    fn add(
        &mut self,
        name: String,
        kind: &EKind,
        e: &crate::parser::SElem,
        named: bool,
    ) -> Option<usize> {
        if self.elems.len() >= MAX_ELEMENTS {
            if !self.too_big {
                self.too_big = true;
                self.p.error(
                    e.pos,
                    e.len,
                    format!("configuration too large: more than {MAX_ELEMENTS} elements after flattening"),
                    None,
                );
            }
            return None;
        }
        let i = self.elems.len();
        if named {
            self.map.insert(name.clone(), i);
        }
        self.elems.push(FElem {
            name,
            kind: match kind {
                EKind::Tunnel => FKind::Tunnel,
                EKind::Class(c) => FKind::Pending(c.clone()),
            },
            config: e.config.clone(),
            config_pos: e.config_pos,
            pos: e.pos,
            len: e.len,
        });
        self.nin.push(0);
        self.nout.push(0);
        Some(i)
    }

    fn connect(&mut self, c: SConn) {
        if let Some(n) = self.nin.get_mut(c.to) {
            *n = (*n).max(c.tport + 1);
        }
        if let Some(n) = self.nout.get_mut(c.from) {
            *n = (*n).max(c.fport + 1);
        }
        self.conns.push(c);
    }

    fn pair(
        &mut self,
        outer: usize,
        inner_in: usize,
        inner_out: usize,
        what: String,
        nin: usize,
        nout: usize,
    ) {
        self.sink_src.insert(outer, inner_in);
        self.sink_src.insert(inner_out, outer);
        self.outer.insert(outer, Outer { what, nin, nout });
    }

    /// Copies a scope's groups and connections, given the flat index of
    /// each scope element.
    fn copy_body(&mut self, scope: &Scope, idx: &[Option<usize>], group_what: &str) {
        for g in &scope.groups {
            if let (Some(Some(o)), Some(Some(i)), Some(Some(u))) =
                (idx.get(g.g), idx.get(g.gi), idx.get(g.go))
            {
                self.pair(*o, *i, *u, group_what.to_string(), g.nin, g.nout);
            }
        }
        for c in &scope.conns {
            if let (Some(Some(from)), Some(Some(to))) = (idx.get(c.from), idx.get(c.to)) {
                self.connect(SConn {
                    from: *from,
                    to: *to,
                    ..*c
                });
            }
        }
    }

    /// Substitutes variables in element `i`'s configuration.
    fn expand_config(&mut self, i: usize, env: &Env, class: &str) -> String {
        let mut log = ExpandLog::default();
        let out = expand(&self.elems[i].config, env, &mut log);
        self.used.extend(log.used.iter().copied());
        let (epos, elen) = (self.elems[i].pos, self.elems[i].len);
        if let Some((_, name)) = log.cycles.first() {
            self.p.error(
                epos,
                elen,
                format!("variable '${name}' refers to itself"),
                None,
            );
        }
        if log.too_large {
            self.p.error(
                epos,
                elen,
                format!(
                    "configuration too large after variable expansion (over {} bytes)",
                    crate::expand::MAX_EXPANSION
                ),
                None,
            );
        }
        if !log.undefined.is_empty() && !self.p.catalog.expands_own_variables(class) {
            let names = env.names();
            let mut seen = HashSet::new();
            for (off, name) in log.undefined {
                if !seen.insert(name.clone()) {
                    continue;
                }
                let e = &self.elems[i];
                let (pos, len) = match e.config_pos {
                    Some(p) => (p.plus(off), name.len() + 1),
                    None => (e.pos, e.len),
                };
                let help = match closest(&format!("${name}"), names.iter().map(String::as_str)) {
                    Some(c) => format!("did you mean '{c}'?"),
                    None => format!("define it with 'define(${name} VALUE)' or on the command line as '{name}=VALUE'"),
                };
                self.p.error(
                    pos,
                    len,
                    format!("undefined variable '${name}'"),
                    Some(help),
                );
            }
        }
        out
    }

    fn expand_elem(&mut self, i: usize, env: &Rc<Env>) {
        let cls = match std::mem::replace(&mut self.elems[i].kind, FKind::Error) {
            FKind::Pending(c) => c,
            other => {
                self.elems[i].kind = other;
                return;
            }
        };
        match cls {
            ClassRef::Error => {}
            ClassRef::Primitive(c) => {
                self.elems[i].config = self.expand_config(i, env, &c);
                self.elems[i].kind = FKind::Real(c);
            }
            ClassRef::Compound(cid) => {
                let name = self
                    .compounds
                    .get(cid)
                    .map(|c| c.name.clone())
                    .unwrap_or_default();
                let config = self.expand_config(i, env, &name);
                self.elems[i].config = config.clone();
                let args = split_args(&config);
                let (nin, nout) = (self.nin[i], self.nout[i]);
                match self.resolve(cid, nin, nout, &args, i) {
                    Some((ClassRef::Compound(found), values)) => {
                        self.instantiate(i, found, values, env)
                    }
                    Some((ClassRef::Primitive(c), _)) => self.elems[i].kind = FKind::Real(c),
                    _ => {}
                }
            }
        }
    }

    /// Chooses among a compound's overloads, as Click does.
    fn resolve(
        &mut self,
        first: usize,
        nin: usize,
        nout: usize,
        args: &[String],
        i: usize,
    ) -> Option<(ClassRef, Vec<String>)> {
        let mut ct = first;
        let mut closest_match: Option<(usize, Vec<String>)> = None;
        let mut nct = 0;
        let mut visited = HashSet::new();
        loop {
            if !visited.insert(ct) {
                break;
            }
            let def = self.compounds.get(ct)?.clone();
            nct += 1;
            let fits = assign_arguments(args, &def.scope.formal_types());
            if let Some(values) = fits {
                if def.ninputs == nin && def.noutputs == nout {
                    return Some((ClassRef::Compound(ct), values));
                }
                closest_match = Some((ct, values));
            }
            match &def.overload {
                Some(ClassRef::Compound(next)) => ct = *next,
                Some(other) => return Some((other.clone(), Vec::new())),
                None => break,
            }
        }
        if nct != 1 || closest_match.is_none() {
            let name = self.compounds[first].name.clone();
            let mut cands = Vec::new();
            let mut c = Some(first);
            let mut listed = HashSet::new();
            while let Some(k) = c.filter(|k| listed.insert(*k)) {
                let d = &self.compounds[k];
                cands.push(format!(
                    "{} (at {})",
                    signature(
                        &d.name,
                        Some(&d.scope.formal_types()),
                        0,
                        d.ninputs,
                        d.noutputs
                    ),
                    self.p.sm.location(d.pos)
                ));
                c = match &d.overload {
                    Some(ClassRef::Compound(n)) => Some(*n),
                    _ => None,
                };
            }
            let e = &self.elems[i];
            let (pos, len) = (e.pos, e.len);
            self.p.error(
                pos,
                len,
                format!(
                    "no match for '{}'",
                    signature(&name, None, args.len(), nin, nout)
                ),
                Some(format!("candidates are: {}", cands.join("; "))),
            );
        }
        closest_match.map(|(k, v)| (ClassRef::Compound(k), v))
    }

    /// Expands element `i` as an instance of compound alternative `cid`.
    fn instantiate(&mut self, i: usize, cid: usize, values: Vec<String>, env: &Rc<Env>) {
        self.instantiated.insert(cid);
        let def = self.compounds[cid].clone();
        let scope = &def.scope;
        // The instance's variables: formals bound to the arguments, then the
        // body's defines, expanded in order.
        let mut ienv = Env {
            vars: Vec::new(),
            parent: env.parent_below(scope.depth),
            depth: scope.depth,
        };
        for (k, v) in scope.vars[..scope.nformals].iter().enumerate() {
            ienv.vars.push(Var {
                name: v.name.clone(),
                value: values.get(k).cloned().unwrap_or_default(),
                define_id: None,
            });
        }
        for v in &scope.vars[scope.nformals..] {
            let mut log = ExpandLog::default();
            let value = expand(&v.value, &ienv, &mut log);
            self.used.extend(log.used);
            ienv.vars.push(Var {
                name: v.name.clone(),
                value,
                define_id: Some(v.id),
            });
        }
        let ienv = Rc::new(ienv);

        let ename = self.elems[i].name.clone();
        let (epos, elen) = (self.elems[i].pos, self.elems[i].len);
        self.elems[i].kind = FKind::Tunnel;
        let tin = self.add_tunnel(format!("{ename}/input"), epos, elen);
        let tout = self.add_tunnel(format!("{ename}/output"), epos, elen);
        let (Some(tin), Some(tout)) = (tin, tout) else {
            return;
        };
        self.pair(
            i,
            tin,
            tout,
            format!("compound element '{ename}'"),
            def.ninputs,
            def.noutputs,
        );

        let group_members: HashSet<usize> = scope
            .groups
            .iter()
            .flat_map(|g| [g.g, g.gi, g.go])
            .collect();
        let mut idx: Vec<Option<usize>> = vec![Some(tin), Some(tout)];
        let first_new = self.elems.len();
        for (j, e) in scope.elems.iter().enumerate().skip(2) {
            let cname = format!("{ename}/{}", e.name);
            if let Some(&prev) = self.map.get(&cname) {
                let help = format!(
                    "'{cname}' was first declared at {}",
                    self.p.sm.location(self.elems[prev].pos)
                );
                self.p.error(
                    epos,
                    elen,
                    format!("redeclaration of element '{cname}'"),
                    Some(help),
                );
                idx.push(None);
                continue;
            }
            let named = !group_members.contains(&j);
            let k = self.add(cname, &e.kind, e, named);
            if k.is_none() {
                return;
            }
            idx.push(k);
        }
        self.copy_body(scope, &idx, "element group");
        let last_new = self.elems.len();
        for k in first_new..last_new {
            self.expand_elem(k, &ienv);
        }
    }

    fn add_tunnel(&mut self, name: String, pos: Pos, len: usize) -> Option<usize> {
        if let Some(&prev) = self.map.get(&name) {
            let help = format!(
                "'{name}' was first declared at {}",
                self.p.sm.location(self.elems[prev].pos)
            );
            self.p.error(
                pos,
                len,
                format!("redeclaration of element '{name}'"),
                Some(help),
            );
            return None;
        }
        let e = crate::parser::SElem {
            name: name.clone(),
            kind: EKind::Tunnel,
            config: String::new(),
            config_pos: None,
            pos,
            len,
        };
        self.add(name, &EKind::Tunnel, &e, true)
    }

    fn is_tunnel(&self, e: usize) -> bool {
        matches!(self.elems.get(e).map(|x| &x.kind), Some(FKind::Tunnel))
    }

    /// The real (element, input port) pairs that input `p` of tunnel `t`
    /// leads to, following compound ports and element groups. Iterative,
    /// so long chains of groups cannot exhaust the stack; results are
    /// memoized and the total work is bounded.
    fn sinks(&mut self, t: usize, p: usize, c: &SConn) -> Ends {
        if let Some(r) = self.memo.get(&(t, p)) {
            return r.clone();
        }
        let mut out = Vec::new();
        let mut found = HashSet::new();
        let mut seen = HashSet::new();
        let mut stack = vec![(t, p)];
        while let Some((x, q)) = stack.pop() {
            if !self.is_tunnel(x) {
                if found.insert((x, q)) {
                    out.push((x, q));
                }
                continue;
            }
            if !seen.insert((x, q)) {
                continue;
            }
            if (x, q) != (t, p) {
                if let Some(r) = self.memo.get(&(x, q)) {
                    for &e in r.iter() {
                        if found.insert(e) {
                            out.push(e);
                        }
                    }
                    continue;
                }
            }
            if self.budget == 0 {
                if !self.too_big {
                    self.too_big = true;
                    self.p.error(
                        c.pos,
                        c.len,
                        "configuration too large: connections through groups and compounds are too complex".into(),
                        None,
                    );
                }
                break;
            }
            self.budget -= 1;
            if let Some(&w) = self.sink_src.get(&x) {
                if let Some(list) = self.by_from.get(&(w, q)) {
                    stack.extend(
                        list.iter()
                            .map(|&ci| (self.conns[ci].to, self.conns[ci].tport)),
                    );
                }
            }
        }
        let r = Rc::new(out);
        self.memo.insert((t, p), r.clone());
        r
    }

    /// Reports connections to ports that a compound instance or element
    /// group does not have.
    fn check_tunnel_ports(&mut self) {
        for ci in 0..self.conns.len() {
            let c = self.conns[ci];
            for (e, port, out) in [(c.to, c.tport, false), (c.from, c.fport, true)] {
                let Some(o) = self.outer.get(&e) else {
                    continue;
                };
                let n = if out { o.nout } else { o.nin };
                if port >= n && self.reported.insert((e, port, out)) {
                    let dir = if out { "output" } else { "input" };
                    let msg = format!("{} has no {dir} {port}", o.what);
                    let help = format!("it has {n} {dir}{}", if n == 1 { "" } else { "s" });
                    self.p.error(c.pos, c.len, msg, Some(help));
                }
            }
        }
    }

    fn unused_defines(&mut self, top: &Scope) {
        let mut unused = Vec::new();
        let scopes = std::iter::once(top).chain(
            self.compounds
                .iter()
                .enumerate()
                .filter(|(k, _)| self.instantiated.contains(k))
                .map(|(_, c)| &c.scope),
        );
        for s in scopes {
            let start = if std::ptr::eq(s, top) { 0 } else { s.nformals };
            for v in &s.vars[start..] {
                if !self.used.contains(&v.id) {
                    unused.push((v.pos, v.len, v.name.clone()));
                }
            }
        }
        for (pos, len, name) in unused {
            self.p.warning(
                pos,
                len,
                format!("variable '${name}' is defined but never used"),
                None,
            );
        }
    }

    fn finish(mut self) -> (Vec<ElementDecl>, Vec<Connection>) {
        for (ci, c) in self.conns.iter().enumerate() {
            self.by_from.entry((c.from, c.fport)).or_default().push(ci);
        }
        self.check_tunnel_ports();
        let mut seen = HashSet::new();
        let mut flat: Vec<(usize, usize, usize, usize, Pos)> = Vec::new();
        // Every real path starts with a connection from a real element.
        for ci in 0..self.conns.len() {
            let c = self.conns[ci];
            if self.is_tunnel(c.from) {
                continue;
            }
            let dsts = if self.is_tunnel(c.to) {
                self.sinks(c.to, c.tport, &c)
            } else {
                Rc::new(vec![(c.to, c.tport)])
            };
            for &(t, tp) in dsts.iter() {
                if flat.len() >= MAX_CONNECTIONS {
                    if !self.too_big {
                        self.too_big = true;
                        self.p.error(
                            c.pos,
                            c.len,
                            format!("configuration too large: more than {MAX_CONNECTIONS} connections after flattening"),
                            None,
                        );
                    }
                    break;
                }
                if seen.insert((c.from, c.fport, t, tp)) {
                    flat.push((c.from, c.fport, t, tp, c.pos));
                }
            }
        }
        let mut remap = vec![usize::MAX; self.elems.len()];
        let mut elements = Vec::new();
        for (i, e) in self.elems.iter().enumerate() {
            let class = match &e.kind {
                FKind::Real(c) => c.clone(),
                FKind::Error => "Error".to_string(),
                FKind::Tunnel | FKind::Pending(_) => continue,
            };
            remap[i] = elements.len();
            elements.push(ElementDecl {
                name: e.name.clone(),
                class,
                config: e.config.clone(),
                loc: self.p.sm.location(e.pos),
            });
        }
        let mut connections: Vec<Connection> = flat
            .into_iter()
            .filter(|&(f, _, t, _, _)| remap[f] != usize::MAX && remap[t] != usize::MAX)
            .map(|(f, fp, t, tp, pos)| Connection {
                from: remap[f],
                from_port: fp,
                to: remap[t],
                to_port: tp,
                loc: self.p.sm.location(pos),
            })
            .collect();
        connections.sort_by_key(|c| (c.from, c.from_port, c.to, c.to_port));
        (elements, connections)
    }
}
