//! The Click statement parser. Like Click's `Lexer`, it builds one scope per
//! file or compound class body: elements (with anonymous `;Class@N`
//! placeholders), connections between them, element-group tunnels, and
//! variables. Element classes are resolved lexically while parsing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use linerate_args::split_args;

use crate::diag::{closest, Diagnostic, Severity};
use crate::lexer::{Lexer, Tok, Token};
use crate::source::{Pos, SourceMap};
use crate::ClassCatalog;

/// How deeply groups and compound classes may nest.
const MAX_NEST: usize = 32;
/// How deeply `require(library ...)` files may nest.
const MAX_LIBRARY_DEPTH: usize = 16;
/// Largest port number accepted.
pub(crate) const MAX_PORT: i64 = 65535;

/// What an element class name refers to.
#[derive(Clone, Debug)]
pub(crate) enum ClassRef {
    /// A class the runtime knows.
    Primitive(String),
    /// A compound class (index into `Parser::compounds`), the first of its
    /// overload chain.
    Compound(usize),
    /// An unknown class (already reported).
    Error,
}

/// What a scope element is.
#[derive(Clone, Debug)]
pub(crate) enum EKind {
    /// `input`/`output` pseudoelements and element-group ends.
    Tunnel,
    /// A real element (or compound instance).
    Class(ClassRef),
}

/// An element of a scope.
#[derive(Clone, Debug)]
pub(crate) struct SElem {
    pub name: String,
    pub kind: EKind,
    pub config: String,
    pub config_pos: Option<Pos>,
    pub pos: Pos,
    pub len: usize,
}

/// A connection inside one scope.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SConn {
    pub from: usize,
    pub fport: usize,
    pub to: usize,
    pub tport: usize,
    pub pos: Pos,
    pub len: usize,
}

/// A formal parameter (value = its keyword, `""` or `__REST__`) or a
/// `define`d variable (value = its raw value).
#[derive(Clone, Debug)]
pub(crate) struct VarDef {
    pub name: String,
    pub value: String,
    pub pos: Pos,
    pub len: usize,
    pub id: usize,
}

/// An element group `( ... )`: the group element and its inner `input`
/// and `output` tunnels, with its port counts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Group {
    pub g: usize,
    pub gi: usize,
    pub go: usize,
    pub nin: usize,
    pub nout: usize,
}

/// A file or compound body.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    pub elems: Vec<SElem>,
    pub map: HashMap<String, usize>,
    pub conns: Vec<SConn>,
    pub nin: Vec<usize>,
    pub nout: Vec<usize>,
    pub anon_offset: usize,
    pub groups: Vec<Group>,
    pub vars: Vec<VarDef>,
    pub nformals: usize,
    pub depth: usize,
    order_error: bool,
}

impl Scope {
    fn add(&mut self, e: SElem) -> usize {
        let i = self.elems.len();
        self.map.insert(e.name.clone(), i);
        self.elems.push(e);
        self.nin.push(0);
        self.nout.push(0);
        i
    }

    fn connect(
        &mut self,
        from: usize,
        fport: usize,
        to: usize,
        tport: usize,
        pos: Pos,
        len: usize,
    ) {
        self.conns.push(SConn {
            from,
            fport,
            to,
            tport,
            pos,
            len,
        });
        if let Some(n) = self.nin.get_mut(to) {
            *n = (*n).max(tport + 1);
        }
        if let Some(n) = self.nout.get_mut(from) {
            *n = (*n).max(fport + 1);
        }
    }

    /// Formal parameter types (`""`, a keyword, or `__REST__`).
    pub fn formal_types(&self) -> Vec<String> {
        self.vars[..self.nformals]
            .iter()
            .map(|v| v.value.clone())
            .collect()
    }
}

/// One alternative of a compound class.
#[derive(Clone, Debug)]
pub(crate) struct CompoundDef {
    pub name: String,
    pub pos: Pos,
    pub scope: Scope,
    pub ninputs: usize,
    pub noutputs: usize,
    /// The next alternative (`||`), or the class extended with `|| ...`.
    pub overload: Option<ClassRef>,
}

/// A `require` or `provide` entry.
pub(crate) struct ReqRaw {
    pub kind: String,
    pub value: String,
    pub pos: Pos,
    pub len: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    File,
    Compound,
    Group,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Term {
    Eof,
    Brace,
    Bar2,
    Paren,
}

/// An element being parsed, before it is added to the scope.
struct Pend {
    name: String,
    ty: Option<ClassRef>,
    decl: Option<ClassRef>,
    bare: bool,
    implicit: bool,
    config: String,
    config_pos: Option<Pos>,
    pos: Pos,
    len: usize,
    inports: Vec<i64>,
    outports: Vec<i64>,
    explicit_in: bool,
    explicit_out: bool,
}

/// An element of a connection's element list, with its port lists
/// (`-1` at the end marks an expandable list such as `[]` or `[1,]`).
struct SetElem {
    idx: usize,
    inports: Vec<i64>,
    outports: Vec<i64>,
    explicit_in: bool,
    explicit_out: bool,
    pos: Pos,
    len: usize,
}

/// Parser state for one configuration.
pub(crate) struct Parser<'a> {
    pub catalog: &'a dyn ClassCatalog,
    pub clickpath: Vec<PathBuf>,
    pub sm: SourceMap,
    pub diags: Vec<Diagnostic>,
    lex: Lexer,
    scopes: Vec<Scope>,
    pub compounds: Vec<CompoundDef>,
    types: HashMap<String, ClassRef>,
    group_depth: usize,
    nest: usize,
    pub requirements: Vec<ReqRaw>,
    provided: Vec<String>,
    libraries: Vec<PathBuf>,
    library_depth: usize,
    last_ends_output: bool,
    next_var_id: usize,
}

fn describe(text: &str, t: &Token) -> String {
    match t.kind {
        Tok::Eof => "end of file".to_string(),
        _ => format!("'{text}'"),
    }
}

fn is_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '@' | '/' | '.' | '-' | ':'))
}

/// Splits an argument into space-separated words, keeping quoted parts
/// together.
fn words(arg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in arg.chars() {
        if let Some(q) = quote {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
        } else if c.is_whitespace() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            if c == '"' || c == '\'' {
                quote = Some(c);
            }
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Removes surrounding quotes (and `\` escapes inside double quotes).
fn unquote(w: &str) -> String {
    if w.len() >= 2 && w.starts_with('\'') && w.ends_with('\'') {
        return w[1..w.len() - 1].to_string();
    }
    if w.len() >= 2 && w.starts_with('"') && w.ends_with('"') {
        let mut out = String::new();
        let mut it = w[1..w.len() - 1].chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                if let Some(n) = it.next() {
                    out.push(n);
                }
            } else {
                out.push(c);
            }
        }
        return out;
    }
    w.to_string()
}

/// Parses a port number like Click's `IntArg` (decimal, `0x` hex, or
/// octal with a leading `0`).
fn parse_port(s: &str) -> Option<i64> {
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<i64>().ok()?
    };
    Some(v)
}

/// Gives anonymous elements (`;Class@N`) their final names, bumping `N`
/// past names already taken, as Click does.
pub(crate) fn deanonymize(scope: &mut Scope) {
    for i in 0..scope.elems.len() {
        let Some(stripped) = scope.elems[i].name.strip_prefix(';').map(str::to_string) else {
            continue;
        };
        let mut name = stripped.clone();
        if scope.map.contains_key(&name) {
            let (prefix, mut n) = match stripped.rfind('@') {
                Some(a) => {
                    let digits: String = stripped[a + 1..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    (
                        stripped[..=a].to_string(),
                        digits.parse::<u64>().unwrap_or(0),
                    )
                }
                None => (format!("{stripped}@"), 0),
            };
            loop {
                n += 1;
                name = format!("{prefix}{n}");
                if !scope.map.contains_key(&name) {
                    break;
                }
            }
        }
        scope.map.insert(name.clone(), i);
        scope.elems[i].name = name;
    }
}

/// Checks the use of an `input` (`isoutput == false`) or `output`
/// pseudoelement and returns its port count.
fn check_pseudo(
    sm: &SourceMap,
    diags: &mut Vec<Diagnostic>,
    scope: &Scope,
    which: usize,
    isoutput: bool,
    what: &str,
    (pos, len): (Pos, usize),
) -> usize {
    let n = if isoutput {
        scope.nin.get(which)
    } else {
        scope.nout.get(which)
    };
    let mut used = vec![false; n.copied().unwrap_or(0)];
    let mut misuse_reported = false;
    for c in &scope.conns {
        if isoutput {
            if c.to == which {
                if let Some(u) = used.get_mut(c.tport) {
                    *u = true;
                }
            }
            if c.from == which && !misuse_reported {
                misuse_reported = true;
                diags.push(sm.diag(
                    Severity::Error,
                    c.pos,
                    c.len,
                    format!("'output' may only be used as a connection destination in {what}"),
                    Some("write '... -> output', not 'output -> ...'".into()),
                ));
            }
        } else {
            if c.from == which {
                if let Some(u) = used.get_mut(c.fport) {
                    *u = true;
                }
            }
            if c.to == which && !misuse_reported {
                misuse_reported = true;
                diags.push(sm.diag(
                    Severity::Error,
                    c.pos,
                    c.len,
                    format!("'input' may only be used as a connection source in {what}"),
                    Some("write 'input -> ...', not '... -> input'".into()),
                ));
            }
        }
    }
    let dir = if isoutput { "output" } else { "input" };
    for (i, u) in used.iter().enumerate() {
        if !u {
            diags.push(sm.diag(
                Severity::Error,
                pos,
                len,
                format!("{dir} {i} of {what} is missing"),
                Some(format!(
                    "{dir} ports must be numbered from 0 without gaps, but only higher {dir} ports are used"
                )),
            ));
        }
    }
    used.len()
}

impl<'a> Parser<'a> {
    /// A parser that consults `catalog` for primitive classes.
    pub fn new(catalog: &'a dyn ClassCatalog, clickpath: Vec<PathBuf>) -> Self {
        Parser {
            catalog,
            clickpath,
            sm: SourceMap::default(),
            diags: Vec::new(),
            lex: Lexer::default(),
            scopes: Vec::new(),
            compounds: Vec::new(),
            types: HashMap::new(),
            group_depth: 0,
            nest: 0,
            requirements: Vec::new(),
            provided: Vec::new(),
            libraries: Vec::new(),
            library_depth: 0,
            last_ends_output: true,
            next_var_id: 0,
        }
    }

    /// Parses a whole file and returns its (not yet flattened) scope.
    pub fn parse(&mut self, text: &str, name: &str, path: Option<PathBuf>) -> Scope {
        let src = self.sm.add(name, path, text);
        self.lex.push(&self.sm, src);
        self.scopes = vec![Scope::default()];
        self.statements(Ctx::File);
        self.lex.pop();
        self.check_capabilities();
        self.scopes.pop().unwrap_or_default()
    }

    // ---- small helpers -------------------------------------------------

    fn lex(&mut self) -> Token {
        self.lex.lex(&mut self.sm, &mut self.diags)
    }

    fn unlex(&mut self, t: Token) {
        self.lex.unlex(t);
    }

    fn peek(&mut self) -> Token {
        self.lex.peek(&mut self.sm, &mut self.diags)
    }

    fn eat(&mut self, c: char) -> bool {
        self.lex.eat(c, &mut self.sm, &mut self.diags)
    }

    fn text(&self, t: &Token) -> String {
        self.lex.text(t).to_string()
    }

    fn found(&self, t: &Token) -> String {
        describe(self.lex.text(t), t)
    }

    pub fn error(&mut self, pos: Pos, len: usize, msg: String, help: Option<String>) {
        let d = self.sm.diag(Severity::Error, pos, len, msg, help);
        self.diags.push(d);
    }

    pub fn warning(&mut self, pos: Pos, len: usize, msg: String, help: Option<String>) {
        let d = self.sm.diag(Severity::Warning, pos, len, msg, help);
        self.diags.push(d);
    }

    fn err_at(&mut self, t: &Token, msg: String, help: Option<String>) {
        self.error(t.pos(), t.len(), msg, help);
    }

    fn scope(&mut self) -> &mut Scope {
        if self.scopes.is_empty() {
            self.scopes.push(Scope::default());
        }
        let n = self.scopes.len() - 1;
        &mut self.scopes[n]
    }

    fn nested(&self) -> bool {
        self.scopes.len() > 1 || self.group_depth > 0
    }

    /// Tokens that may start or end a statement; they are put back after an
    /// error so that the statement loop sees them.
    fn is_structural(&self, t: &Token) -> bool {
        match t.kind {
            Tok::Char(';') | Tok::Char('}') | Tok::Bar2 | Tok::Eof => true,
            Tok::Elementclass | Tok::Require | Tok::Provide | Tok::Define => true,
            Tok::Char(')') => self.group_depth > 0,
            _ => false,
        }
    }

    /// Skips tokens up to the `close` matching an already consumed `open`.
    fn skip_balanced(&mut self, open: char, close: char) {
        let mut depth = 1usize;
        loop {
            let t = self.lex();
            match t.kind {
                Tok::Eof => return,
                Tok::Char(c) if c == open => depth += 1,
                Tok::Char(c) if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// Known class names, for suggestions.
    fn class_names(&self) -> Vec<String> {
        let mut names = self.catalog.class_names();
        names.extend(
            self.types
                .iter()
                .filter(|(_, c)| !matches!(c, ClassRef::Error))
                .map(|(n, _)| n.clone()),
        );
        names.sort();
        names.dedup();
        names
    }

    fn class_help(&self, name: &str) -> Option<String> {
        let names = self.class_names();
        closest(name, names.iter().map(String::as_str)).map(|c| format!("did you mean '{c}'?"))
    }

    fn lookup_class(&self, name: &str) -> Option<ClassRef> {
        if let Some(c) = self.types.get(name) {
            return Some(c.clone());
        }
        if self.catalog.is_primitive(name) {
            return Some(ClassRef::Primitive(name.to_string()));
        }
        None
    }

    /// The class named `name`; an unknown name is reported (when `report`)
    /// and remembered as an error class so it is reported only once.
    fn force_class(&mut self, name: &str, pos: Pos, len: usize, report: bool) -> ClassRef {
        if let Some(c) = self.lookup_class(name) {
            return c;
        }
        if report {
            let help = self.class_help(name);
            self.error(pos, len, format!("unknown element class '{name}'"), help);
        }
        let c = ClassRef::Error;
        self.types.insert(name.to_string(), c.clone());
        c
    }

    fn anon_name(&mut self, class: &str) -> String {
        let s = self.scope();
        format!(
            ";{}@{}",
            class,
            (s.elems.len() + 1).saturating_sub(s.anon_offset)
        )
    }

    /// The element called `name` in the current scope, created if needed.
    fn get_element(
        &mut self,
        name: String,
        kind: EKind,
        config: String,
        config_pos: Option<Pos>,
        pos: Pos,
        len: usize,
    ) -> usize {
        if let Some(&i) = self.scope().map.get(&name) {
            return i;
        }
        if !name.starts_with(';')
            && matches!(kind, EKind::Class(_))
            && name
                .split('/')
                .any(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
        {
            self.error(
                pos,
                len,
                format!("element name '{name}' has an all-digit component"),
                Some(
                    "each '/'-separated part of an element name needs a non-digit character".into(),
                ),
            );
        }
        self.scope().add(SElem {
            name,
            kind,
            config,
            config_pos,
            pos,
            len,
        })
    }

    // ---- statements ------------------------------------------------------

    fn statements(&mut self, ctx: Ctx) -> Term {
        let saved = std::mem::replace(&mut self.last_ends_output, true);
        let term = loop {
            let t = self.lex();
            match t.kind {
                Tok::Ident | Tok::Arrow | Tok::DArrow | Tok::Char('[' | '{' | '(') => {
                    self.unlex(t);
                    self.connection();
                }
                Tok::Elementclass => self.elementclass(),
                Tok::Require => self.require(&t),
                Tok::Provide => self.provide(&t),
                Tok::Define => self.define(&t),
                Tok::Char(';') => {}
                Tok::Char('}') | Tok::Bar2 => match ctx {
                    Ctx::Compound => {
                        break if t.kind == Tok::Bar2 {
                            Term::Bar2
                        } else {
                            Term::Brace
                        }
                    }
                    Ctx::Group => {
                        let f = self.found(&t);
                        self.err_at(
                            &t,
                            format!("expected ')' to close element group, found {f}"),
                            None,
                        );
                        self.unlex(t);
                        break Term::Paren;
                    }
                    Ctx::File => {
                        let f = self.found(&t);
                        self.err_at(
                            &t,
                            format!("unexpected {f} outside a compound element class"),
                            None,
                        );
                    }
                },
                Tok::Char(')') => {
                    if ctx == Ctx::Group {
                        break Term::Paren;
                    }
                    self.err_at(&t, "unmatched ')'".into(), None);
                }
                Tok::Eof => break Term::Eof,
                _ => {
                    let f = self.found(&t);
                    self.err_at(&t, format!("syntax error: unexpected {f}"), None);
                }
            }
        };
        self.last_ends_output = saved;
        term
    }

    fn connection(&mut self) {
        let mut last: Option<Vec<SetElem>> = None;
        let mut connector: Option<Token> = None;
        while let Some(set) = self.element_set(last.is_none(), connector) {
            match (&last, &connector) {
                (Some(prev), Some(c)) => self.connect_all(prev, &set, *c),
                _ => self.check_useless(&set, false),
            }
            last = Some(set);
            let mut more = false;
            loop {
                let t = self.lex();
                match t.kind {
                    Tok::Char(',') | Tok::Colon2 => {
                        let f = self.found(&t);
                        self.err_at(
                            &t,
                            format!("expected '->' or ';' after element, found {f}"),
                            None,
                        );
                    }
                    Tok::Arrow | Tok::DArrow => {
                        connector = Some(t);
                        more = true;
                        break;
                    }
                    Tok::Ident
                    | Tok::Char('{' | '}' | '[' | ')')
                    | Tok::Bar2
                    | Tok::Elementclass
                    | Tok::Require
                    | Tok::Provide
                    | Tok::Define => {
                        self.unlex(t);
                        break;
                    }
                    Tok::Char(';') | Tok::Eof => break,
                    _ => {
                        let f = self.found(&t);
                        self.err_at(
                            &t,
                            format!("expected '->' or ';' after element, found {f}"),
                            None,
                        );
                        break;
                    }
                }
            }
            if !more {
                break;
            }
        }
        if let Some(l) = &last {
            self.check_useless(l, true);
            let out = self.scope().map.get("output").copied();
            self.last_ends_output = l.len() == 1 && Some(l[0].idx) == out;
        }
    }

    fn check_useless(&mut self, set: &[SetElem], isoutput: bool) {
        for e in set {
            let bad = if isoutput {
                e.explicit_out && !e.outports.is_empty()
            } else {
                e.explicit_in && !e.inports.is_empty()
            };
            if bad {
                let msg = if isoutput {
                    "output ports ignored at end of chain"
                } else {
                    "input ports ignored at start of chain"
                };
                self.error(
                    e.pos,
                    e.len,
                    msg.into(),
                    Some("remove the port list or connect the element".into()),
                );
                break;
            }
        }
    }

    /// Parses `[ports] element [ports], ...`; `None` when no element was
    /// found (the connection is over).
    fn element_set(&mut self, first_set: bool, connector: Option<Token>) -> Option<Vec<SetElem>> {
        let mut pend: Vec<Pend> = Vec::new();
        loop {
            match self.element(first_set, pend.is_empty(), connector) {
                Some(pe) => pend.push(pe),
                None if pend.is_empty() => return None,
                None => break,
            }
            if !self.eat(',') {
                break;
            }
        }
        let next = self.peek();
        let next_arrow = matches!(next.kind, Tok::Arrow | Tok::DArrow);
        let any_implicit = pend.iter().any(|p| p.implicit);
        let any_ports = pend.iter().any(|p| p.explicit_in || p.explicit_out);
        if any_implicit && !first_set && next_arrow {
            self.err_at(
                &next,
                "implicit ports used in the middle of a chain".into(),
                None,
            );
        }
        // `a, b :: Class(config)` declares every listed element.
        if pend.len() > 1 && first_set && !next_arrow && !any_ports && !any_implicit {
            let k = pend.iter().position(|e| !e.bare).unwrap_or(pend.len() - 1);
            if k == pend.len() - 1 && pend[k].decl.is_some() {
                let (decl, config, cpos) = (
                    pend[k].decl.clone(),
                    pend[k].config.clone(),
                    pend[k].config_pos,
                );
                for e in &mut pend[..k] {
                    e.decl = decl.clone();
                    e.config = config.clone();
                    e.config_pos = cpos;
                }
            }
        }
        let mut set = Vec::with_capacity(pend.len());
        for pe in pend {
            let idx = self.add_pending(&pe);
            set.push(SetElem {
                idx,
                inports: pe.inports,
                outports: pe.outports,
                explicit_in: pe.explicit_in,
                explicit_out: pe.explicit_out,
                pos: pe.pos,
                len: pe.len,
            });
        }
        Some(set)
    }

    fn add_pending(&mut self, pe: &Pend) -> usize {
        let existing = self.scope().map.get(&pe.name).copied();
        match (existing, &pe.ty) {
            (Some(i), None) => {
                if pe.decl.is_some() {
                    let prev = self.scope().elems[i].clone();
                    let help = match prev.kind {
                        EKind::Tunnel => Some(format!("'{}' is a pseudoelement here", pe.name)),
                        EKind::Class(_) => Some(format!(
                            "'{}' was first declared at {}",
                            pe.name,
                            self.sm.location(prev.pos)
                        )),
                    };
                    self.error(
                        pe.pos,
                        pe.len,
                        format!("redeclaration of element '{}'", pe.name),
                        help,
                    );
                }
                i
            }
            _ => {
                let mut ty = pe.ty.clone();
                if pe.decl.is_some() && ty.is_some() {
                    self.error(
                        pe.pos,
                        pe.len,
                        format!("class '{}' used as element name", pe.name),
                        Some("choose an element name that is not a class name".into()),
                    );
                } else if pe.decl.is_none() && ty.is_none() {
                    self.undeclared(pe);
                    ty = Some(ClassRef::Error);
                    self.types.insert(pe.name.clone(), ClassRef::Error);
                }
                match ty {
                    Some(cls) => {
                        let name = self.anon_name(&pe.name);
                        self.get_element(
                            name,
                            EKind::Class(cls),
                            pe.config.clone(),
                            pe.config_pos,
                            pe.pos,
                            pe.len,
                        )
                    }
                    None => {
                        let cls = pe.decl.clone().unwrap_or(ClassRef::Error);
                        self.get_element(
                            pe.name.clone(),
                            EKind::Class(cls),
                            pe.config.clone(),
                            pe.config_pos,
                            pe.pos,
                            pe.len,
                        )
                    }
                }
            }
        }
    }

    fn undeclared(&mut self, pe: &Pend) {
        let looks_like_class = !pe.bare || pe.name.starts_with(|c: char| c.is_ascii_uppercase());
        if looks_like_class {
            let help = self.class_help(&pe.name);
            self.error(
                pe.pos,
                pe.len,
                format!("unknown element class '{}'", pe.name),
                help,
            );
            return;
        }
        let names: Vec<String> = {
            let s = self.scope();
            let mut v: Vec<String> = s
                .elems
                .iter()
                .filter(|e| matches!(e.kind, EKind::Class(_)) && !e.name.starts_with(';'))
                .map(|e| e.name.clone())
                .collect();
            v.sort();
            v
        };
        let help = match closest(&pe.name, names.iter().map(String::as_str)) {
            Some(c) => Some(format!("did you mean '{c}'?")),
            None => match self.class_help(&pe.name) {
                Some(h) => Some(h),
                None => Some(format!("declare it first, e.g. '{} :: Class'", pe.name)),
            },
        };
        self.error(
            pe.pos,
            pe.len,
            format!("undeclared element '{}'", pe.name),
            help,
        );
    }

    /// Parses one element; `None` if the next tokens are not an element.
    fn element(
        &mut self,
        first_set: bool,
        first_in_set: bool,
        connector: Option<Token>,
    ) -> Option<Pend> {
        let (inports, explicit_in) = self.ports();
        let t = self.lex();
        let mut pe = Pend {
            name: String::new(),
            ty: None,
            decl: None,
            bare: false,
            implicit: false,
            config: String::new(),
            config_pos: None,
            pos: t.pos(),
            len: t.len(),
            inports,
            outports: Vec::new(),
            explicit_in,
            explicit_out: false,
        };
        match t.kind {
            Tok::Ident => {
                pe.name = self.text(&t);
                pe.ty = self.lookup_class(&pe.name);
                pe.bare = true;
            }
            Tok::Char('{') => {
                pe.ty = Some(self.compound_class("", t.pos()));
            }
            Tok::Char('(') => return self.group(t, pe),
            _ => {
                let nested = self.nested();
                let has_in = !pe.inports.is_empty();
                let implicit = if nested && matches!(t.kind, Tok::Arrow | Tok::DArrow) {
                    let imp = first_set && (has_in || first_in_set);
                    if imp && !has_in && !self.last_ends_output {
                        let a = self.text(&t);
                        self.warning(
                            t.pos(),
                            t.len(),
                            format!("suggest 'input {a}' or '[0] {a}' to start connection"),
                            None,
                        );
                    }
                    imp
                } else if nested && t.is(',') {
                    has_in
                } else if nested && t.kind != Tok::Colon2 {
                    !first_set && (has_in || first_in_set)
                } else {
                    false
                };
                if implicit {
                    pe.name = if first_set { "input" } else { "output" }.to_string();
                    pe.implicit = true;
                    pe.len = 0;
                    if first_set {
                        pe.outports = std::mem::take(&mut pe.inports);
                        pe.explicit_out = pe.explicit_in;
                        pe.explicit_in = false;
                    }
                    self.unlex(t);
                    return Some(pe);
                }
                let f = self.found(&t);
                if has_in {
                    self.err_at(
                        &t,
                        format!("stranded port list: expected element after ']', found {f}"),
                        None,
                    );
                } else if !first_in_set {
                    self.err_at(&t, format!("expected element after ',', found {f}"), None);
                } else if !first_set {
                    let c = connector
                        .map(|c| self.text(&c))
                        .unwrap_or_else(|| "->".into());
                    self.err_at(&t, format!("expected element after '{c}', found {f}"), None);
                } else if !nested {
                    let help = matches!(t.kind, Tok::Arrow | Tok::DArrow).then(|| {
                        "implicit 'input'/'output' connections are only allowed inside compound classes and groups".to_string()
                    });
                    self.err_at(&t, format!("expected element, found {f}"), help);
                }
                if self.is_structural(&t) || (nested && first_set && first_in_set && !has_in) {
                    self.unlex(t);
                }
                return None;
            }
        }
        self.element_rest(pe)
    }

    /// Parses what may follow an element name: `:: Class`, `(config)`, and
    /// output ports.
    fn element_rest(&mut self, mut pe: Pend) -> Option<Pend> {
        let t = self.lex();
        if t.kind == Tok::Colon2 {
            pe.bare = false;
            let t2 = self.lex();
            match t2.kind {
                Tok::Ident => {
                    let c = self.text(&t2);
                    pe.decl = Some(self.force_class(&c, t2.pos(), t2.len(), true));
                }
                Tok::Char('{') => pe.decl = Some(self.compound_class("", t2.pos())),
                _ => {
                    let f = self.found(&t2);
                    self.err_at(
                        &t2,
                        format!("missing element class after '::', found {f}"),
                        None,
                    );
                    pe.decl = Some(ClassRef::Error);
                    self.unlex(t2);
                }
            }
        } else {
            self.unlex(t);
        }
        let t = self.lex();
        if t.is('(') {
            if pe.decl.is_none() && pe.ty.is_none() && self.scope().map.contains_key(&pe.name) {
                self.err_at(
                    &t,
                    format!(
                        "configuration string ignored on element reference '{}'",
                        pe.name
                    ),
                    Some(
                        "an element's configuration can only be given where it is declared".into(),
                    ),
                );
            }
            let (config, closed) = self.lex.config(&t, &mut self.sm, &mut self.diags);
            if !closed {
                self.err_at(
                    &t,
                    "unclosed '(': configuration string runs to end of file".into(),
                    None,
                );
            }
            pe.config = config;
            pe.config_pos = Some(t.pos().plus(1));
            pe.bare = false;
        } else {
            self.unlex(t);
        }
        if self.peek().is('[') {
            let (p, e) = self.ports();
            pe.outports = p;
            pe.explicit_out = e;
        }
        Some(pe)
    }

    /// Parses an optional port list `[p, q-r, ...]`.
    fn ports(&mut self) -> (Vec<i64>, bool) {
        if !self.eat('[') {
            return (Vec::new(), false);
        }
        let mut ports: Vec<i64> = Vec::new();
        loop {
            let t = self.lex();
            if t.kind == Tok::Ident {
                let s = self.text(&t);
                let mut lo = match parse_port(&s) {
                    Some(p) if (0..=MAX_PORT).contains(&p) => p,
                    Some(_) => {
                        self.err_at(
                            &t,
                            format!("port number '{s}' out of range (0 to {MAX_PORT})"),
                            None,
                        );
                        0
                    }
                    None => {
                        self.err_at(
                            &t,
                            format!("port number should be an integer, found '{s}'"),
                            None,
                        );
                        0
                    }
                };
                let mut hi = lo;
                if self.eat('-') {
                    let t2 = self.lex();
                    let s2 = self.text(&t2);
                    match (t2.kind, parse_port(&s2)) {
                        (Tok::Ident, Some(p)) if (lo..=MAX_PORT).contains(&p) => hi = p,
                        (Tok::Ident, _) => {
                            self.err_at(
                                &t2,
                                format!("bad port range '{s}-{s2}'"),
                                Some("a range is written 'LOW-HIGH' with LOW <= HIGH".into()),
                            );
                            lo = 0;
                            hi = 0;
                        }
                        _ => {
                            let f = self.found(&t2);
                            self.err_at(
                                &t2,
                                format!("expected port number after '-', found {f}"),
                                None,
                            );
                            self.unlex(t2);
                        }
                    }
                }
                if ports.len() as i64 + (hi - lo) > MAX_PORT {
                    self.err_at(&t, "too many ports in port list".into(), None);
                } else {
                    ports.extend(lo..=hi);
                }
            } else if t.is(']') {
                if ports.is_empty() {
                    ports.push(0);
                }
                ports.push(-1);
                break;
            } else {
                let f = self.found(&t);
                self.err_at(&t, format!("expected port number, found {f}"), None);
                self.unlex(t);
                self.skip_port_list();
                break;
            }
            let t = self.lex();
            if t.is(']') {
                break;
            }
            if !t.is(',') {
                let f = self.found(&t);
                self.err_at(
                    &t,
                    format!("expected ',' or ']' in port list, found {f}"),
                    None,
                );
                self.unlex(t);
                self.skip_port_list();
                break;
            }
        }
        (ports, true)
    }

    /// After an error in a port list, skips to its `]` (consumed) unless a
    /// token that ends statements comes first.
    fn skip_port_list(&mut self) {
        loop {
            let t = self.lex();
            if t.is(']') {
                return;
            }
            if self.is_structural(&t) || matches!(t.kind, Tok::Char('{' | '(')) {
                self.unlex(t);
                return;
            }
        }
    }

    /// Parses an element group after its `(`.
    fn group(&mut self, open: Token, mut pe: Pend) -> Option<Pend> {
        if self.nest >= MAX_NEST {
            self.err_at(
                &open,
                format!("element groups and compound classes nested too deeply (limit {MAX_NEST})"),
                None,
            );
            self.skip_balanced('(', ')');
            return None;
        }
        let name = self.anon_name("");
        let pos = open.pos();
        let g = self.get_element(name.clone(), EKind::Tunnel, String::new(), None, pos, 1);
        let gi = self.get_element(
            format!("{name}/input"),
            EKind::Tunnel,
            String::new(),
            None,
            pos,
            1,
        );
        let go = self.get_element(
            format!("{name}/output"),
            EKind::Tunnel,
            String::new(),
            None,
            pos,
            1,
        );
        let saved_in = self.scope().map.insert("input".into(), gi);
        let saved_out = self.scope().map.insert("output".into(), go);
        self.group_depth += 1;
        self.nest += 1;
        let term = self.statements(Ctx::Group);
        self.group_depth -= 1;
        self.nest -= 1;
        if term == Term::Eof {
            self.err_at(
                &open,
                "unclosed '(': element group is never closed".into(),
                None,
            );
        }
        let n = self.scopes.len() - 1;
        let nin = check_pseudo(
            &self.sm,
            &mut self.diags,
            &self.scopes[n],
            gi,
            false,
            "element group",
            (pos, 1),
        );
        let nout = check_pseudo(
            &self.sm,
            &mut self.diags,
            &self.scopes[n],
            go,
            true,
            "element group",
            (pos, 1),
        );
        let s = self.scope();
        for (key, saved) in [("input", saved_in), ("output", saved_out)] {
            match saved {
                Some(v) => s.map.insert(key.into(), v),
                None => s.map.remove(key),
            };
        }
        s.groups.push(Group {
            g,
            gi,
            go,
            nin,
            nout,
        });
        pe.name = name;
        pe.len = 1;
        if !pe.explicit_in {
            pe.inports = (0..nin as i64).collect();
        }
        pe.outports = (0..nout as i64).collect();
        self.element_rest(pe)
    }

    /// Connects every output of `outs` to the inputs of `ins`, as Click
    /// does for `->` and `=>`.
    fn connect_all(&mut self, outs: &[SetElem], ins: &[SetElem], connector: Token) {
        let darrow = connector.kind == Tok::DArrow;
        let analyze = |set: &[SetElem], out: bool| {
            let (mut minp, mut exp) = (0i64, 0i64);
            for e in set {
                let p = if out { &e.outports } else { &e.inports };
                let n = p.len() as i64;
                if n <= 1 {
                    minp += 1;
                } else if p[p.len() - 1] == -1 {
                    minp += n - 1;
                    exp += 1;
                } else {
                    minp += n;
                }
            }
            (minp, exp)
        };
        let (m0, e0) = analyze(ins, false);
        let (m1, e1) = analyze(outs, true);
        let mut minp = [m0, m1];
        let mut expandable = [e0 > 0, e1 > 0];
        if e0 + e1 > 1 {
            self.err_at(
                &connector,
                "at most one expandable port allowed per connection".into(),
                None,
            );
            let k = usize::from(minp[0] < minp[1]);
            expandable[k] = false;
        }
        if darrow {
            // `=>` reads a lone element without ports as "ports 0, 1, ...".
            for k in 0..2 {
                let first_empty = if k == 0 {
                    ins.first().is_some_and(|e| e.inports.is_empty())
                } else {
                    outs.first().is_some_and(|e| e.outports.is_empty())
                };
                if minp[k] == 1 && minp[1 - k] > 1 && first_empty {
                    expandable[k] = true;
                }
            }
        }
        let mut step = [false; 2];
        let mut nexp = [0i64; 2];
        for k in 0..2 {
            step[k] = minp[k] > 1 || expandable[k];
            nexp[k] = if expandable[k] {
                minp[1 - k] - minp[k]
            } else {
                0
            };
        }
        if step[0] && step[1] {
            if !darrow {
                self.err_at(
                    &connector,
                    "syntax error: many-to-many connections require '=>'".into(),
                    Some("use '=>' to connect several outputs to several inputs one to one".into()),
                );
            }
            if !expandable[0] && !expandable[1] && minp[0] != minp[1] {
                self.err_at(
                    &connector,
                    format!(
                        "connection mismatch: {} outputs connected to {} inputs",
                        minp[1], minp[0]
                    ),
                    None,
                );
            } else if !expandable[0] && minp[0] < minp[1] {
                self.err_at(
                    &connector,
                    format!(
                        "connection mismatch: {} or more outputs connected to {} inputs",
                        minp[1], minp[0]
                    ),
                    None,
                );
            } else if !expandable[1] && minp[1] < minp[0] {
                self.err_at(
                    &connector,
                    format!(
                        "connection mismatch: {} outputs connected to {} or more inputs",
                        minp[1], minp[0]
                    ),
                    None,
                );
            }
        } else if !step[0] && !step[1] {
            step[0] = true;
        }
        minp[0] = minp[0].max(0);
        let sets: [&[SetElem]; 2] = [ins, outs];
        let ports_of = |k: usize, e: &SetElem| -> Vec<i64> {
            if k == 0 {
                e.inports.clone()
            } else {
                e.outports.clone()
            }
        };
        let mut it = [0usize; 2];
        let mut port = [-1i64; 2];
        let mut ppos = [0usize; 2];
        let (cpos, clen) = (connector.pos(), connector.len());
        while it[0] < ins.len() && it[1] < outs.len() {
            for k in 0..2 {
                if port[k] < 0 {
                    let pv = ports_of(k, &sets[k][it[k]]);
                    port[k] = pv.first().copied().unwrap_or(0).max(0);
                }
            }
            let (from, to) = (outs[it[1]].idx, ins[it[0]].idx);
            self.scope()
                .connect(from, port[1] as usize, to, port[0] as usize, cpos, clen);
            for k in 0..2 {
                if !step[k] {
                    continue;
                }
                let pv = ports_of(k, &sets[k][it[k]]);
                let np = pv.len();
                ppos[k] += 1;
                if ppos[k] < np && pv[ppos[k]] >= 0 {
                    port[k] = pv[ppos[k]];
                } else if np >= 2 && pv[np - 1] == -1 && nexp[k] > 0 {
                    port[k] = (pv[np - 2] + ppos[k] as i64 - (np as i64 - 2)).min(MAX_PORT);
                    nexp[k] -= 1;
                } else if np == 0 && minp[k] == 1 && nexp[k] > 0 {
                    port[k] = (ppos[k] as i64).min(MAX_PORT);
                    nexp[k] -= 1;
                } else {
                    port[k] = -1;
                    ppos[k] = 0;
                    it[k] += 1;
                }
            }
        }
    }

    // ---- compound classes ----------------------------------------------

    /// Parses a compound class body (after its `{`): alternatives separated
    /// by `||`, optionally ending in `|| ...`.
    fn compound_class(&mut self, name: &str, open_pos: Pos) -> ClassRef {
        if self.nest >= MAX_NEST {
            self.error(
                open_pos,
                1,
                format!("element groups and compound classes nested too deeply (limit {MAX_NEST})"),
                None,
            );
            self.skip_balanced('{', '}');
            return ClassRef::Error;
        }
        let saved_types = self.types.clone();
        let mut defs: Vec<usize> = Vec::new();
        let mut extension: Option<ClassRef> = None;
        loop {
            let t = self.lex();
            if t.kind == Tok::Dots {
                if defs.is_empty() {
                    self.err_at(
                        &t,
                        "'...' should occur last, after one or more compounds".into(),
                        None,
                    );
                }
                let ext = match self.lookup_class(name) {
                    Some(c) => c,
                    None => {
                        self.err_at(
                            &t,
                            format!("cannot extend unknown element class '{name}'"),
                            Some(
                                "'|| ...' refers to an earlier definition of the same class".into(),
                            ),
                        );
                        ClassRef::Error
                    }
                };
                extension = Some(ext);
                let t2 = self.lex();
                if !t2.is('}') {
                    let f = self.found(&t2);
                    self.err_at(&t2, format!("expected '}}' after '...', found {f}"), None);
                    self.unlex(t2);
                    self.skip_balanced('{', '}');
                }
                break;
            }
            self.unlex(t);
            let depth = self.scope().depth + 1;
            let mut scope = Scope {
                anon_offset: 2,
                depth,
                ..Scope::default()
            };
            for pseudo in ["input", "output"] {
                scope.add(SElem {
                    name: pseudo.into(),
                    kind: EKind::Tunnel,
                    config: String::new(),
                    config_pos: None,
                    pos: t.pos(),
                    len: 0,
                });
            }
            self.scopes.push(scope);
            self.nest += 1;
            let saved_group = std::mem::replace(&mut self.group_depth, 0);
            self.formals();
            let term = self.statements(Ctx::Compound);
            self.group_depth = saved_group;
            self.nest -= 1;
            let mut scope = self.scopes.pop().unwrap_or_default();
            self.types = saved_types.clone();
            if term == Term::Eof {
                self.error(
                    open_pos,
                    1,
                    "unclosed '{': compound element class is never closed".into(),
                    None,
                );
            }
            let what = if name.is_empty() {
                "anonymous compound element class".to_string()
            } else {
                format!("compound element class '{name}'")
            };
            let ninputs = check_pseudo(
                &self.sm,
                &mut self.diags,
                &scope,
                0,
                false,
                &what,
                (open_pos, 1),
            );
            let noutputs = check_pseudo(
                &self.sm,
                &mut self.diags,
                &scope,
                1,
                true,
                &what,
                (open_pos, 1),
            );
            deanonymize(&mut scope);
            defs.push(self.compounds.len());
            self.compounds.push(CompoundDef {
                name: name.to_string(),
                pos: open_pos,
                scope,
                ninputs,
                noutputs,
                overload: None,
            });
            if term != Term::Bar2 {
                break;
            }
        }
        for w in defs.windows(2) {
            self.compounds[w[0]].overload = Some(ClassRef::Compound(w[1]));
        }
        if let Some(&l) = defs.last() {
            self.compounds[l].overload = extension.clone();
        }
        let cls = match defs.first() {
            Some(&f) => ClassRef::Compound(f),
            None => extension.unwrap_or(ClassRef::Error),
        };
        if !name.is_empty() {
            self.types.insert(name.to_string(), cls.clone());
        }
        cls
    }

    /// Parses compound formal parameters up to `|`, if any.
    fn formals(&mut self) {
        loop {
            let t1 = self.lex();
            let (vtype, var) = match t1.kind {
                Tok::Ident => {
                    let t2 = self.lex();
                    if t2.kind == Tok::Var {
                        (self.text(&t1), t2)
                    } else {
                        if !self.scope().vars.is_empty() {
                            let f = self.found(&t2);
                            let k = self.text(&t1);
                            self.err_at(
                                &t2,
                                format!("expected variable after keyword '{k}', found {f}"),
                                None,
                            );
                        }
                        self.unlex(t2);
                        self.unlex(t1);
                        return;
                    }
                }
                Tok::Var => (String::new(), t1),
                Tok::Char('|') => return,
                _ => {
                    if self.scope().nformals > 0 {
                        let f = self.found(&t1);
                        self.err_at(&t1, format!("expected variable, found {f}"), None);
                    }
                    self.unlex(t1);
                    return;
                }
            };
            let vname = self.text(&var)[1..].to_string();
            self.define_var(&vname, &vtype, true, var.pos(), var.len());
            let sep = self.lex();
            if sep.is('|') {
                return;
            }
            if !sep.is(',') {
                let f = self.found(&sep);
                self.err_at(
                    &sep,
                    format!("expected ',' or '|' after compound parameter, found {f}"),
                    None,
                );
                self.unlex(sep);
                return;
            }
        }
    }

    fn define_var(&mut self, name: &str, value: &str, formal: bool, pos: Pos, len: usize) {
        let prev = self
            .scope()
            .vars
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.pos);
        if let Some(p) = prev {
            let help = format!("'${name}' was first defined at {}", self.sm.location(p));
            self.error(
                pos,
                len,
                format!("variable '${name}' defined twice in the same scope"),
                Some(help),
            );
            return;
        }
        let id = self.next_var_id;
        self.next_var_id += 1;
        let s = self.scope();
        s.vars.push(VarDef {
            name: name.to_string(),
            value: value.to_string(),
            pos,
            len,
            id,
        });
        if !formal {
            return;
        }
        s.nformals = s.vars.len();
        let n = s.nformals;
        let repeated = !value.is_empty() && s.vars[..n - 1].iter().any(|v| v.value == value);
        let out_of_order = !s.order_error
            && n > 1
            && ((value.is_empty() && !s.vars[n - 2].value.is_empty())
                || s.vars[n - 2].value == "__REST__");
        if out_of_order {
            s.order_error = true;
        }
        if repeated {
            self.error(
                pos,
                len,
                format!("repeated keyword parameter '{value}' in compound element class"),
                None,
            );
        }
        if out_of_order {
            self.error(
                pos,
                len,
                "compound element parameters out of order".into(),
                Some("the correct order is '[positional], [keywords], [__REST__]'".into()),
            );
        }
    }

    fn elementclass(&mut self) {
        let t = self.lex();
        let name = if t.kind == Tok::Ident {
            self.text(&t)
        } else {
            let f = self.found(&t);
            self.err_at(
                &t,
                format!("expected element class name after 'elementclass', found {f}"),
                None,
            );
            self.unlex(t);
            String::new()
        };
        let t2 = self.lex();
        match t2.kind {
            Tok::Char('{') => {
                self.compound_class(&name, t2.pos());
            }
            Tok::Ident => {
                let other = self.text(&t2);
                let cls = self.force_class(&other, t2.pos(), t2.len(), true);
                if !name.is_empty() {
                    self.types.insert(name, cls);
                }
            }
            _ => {
                let f = self.found(&t2);
                self.err_at(
                    &t2,
                    format!("expected '{{' or a class name after 'elementclass {name}', found {f}"),
                    None,
                );
                if !name.is_empty() {
                    self.types.insert(name.clone(), ClassRef::Error);
                }
                if self.is_structural(&t2) {
                    self.unlex(t2);
                }
            }
        }
    }

    // ---- define, require, provide --------------------------------------

    /// Reads `( CONFIG )` after a keyword; returns the text and the position
    /// of its first byte.
    fn paren_config(&mut self, kw: &Token) -> Option<(String, Pos)> {
        let open = self.lex();
        if !open.is('(') {
            let (k, f) = (self.text(kw), self.found(&open));
            self.err_at(&open, format!("expected '(' after '{k}', found {f}"), None);
            if self.is_structural(&open) {
                self.unlex(open);
            }
            return None;
        }
        let (config, closed) = self.lex.config(&open, &mut self.sm, &mut self.diags);
        if !closed {
            self.err_at(
                &open,
                "unclosed '(': configuration string runs to end of file".into(),
                None,
            );
        }
        Some((config, open.pos().plus(1)))
    }

    /// Positions of the arguments of `config` (best effort: comments
    /// removed by `split_args` may shift them).
    fn args_with_pos(config: &str, base: Pos) -> Vec<(String, Pos)> {
        let mut cursor = 0;
        split_args(config)
            .into_iter()
            .map(|a| {
                let pos = match config.get(cursor..).and_then(|rest| rest.find(a.as_str())) {
                    Some(p) if !a.is_empty() => {
                        cursor += p + a.len();
                        base.plus(cursor - a.len())
                    }
                    _ => base,
                };
                (a, pos)
            })
            .collect()
    }

    fn define(&mut self, kw: &Token) {
        let Some((config, base)) = self.paren_config(kw) else {
            return;
        };
        for (arg, pos) in Self::args_with_pos(&config, base) {
            if arg.is_empty() {
                continue;
            }
            let end = arg.find(char::is_whitespace).unwrap_or(arg.len());
            let (var, value) = (&arg[..end], arg[end..].trim());
            let ok = var.len() >= 2
                && var.starts_with('$')
                && var[1..]
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if !ok {
                self.error(
                    pos,
                    end,
                    format!("bad 'define' declaration: '{var}' is not a variable"),
                    Some("write 'define($NAME value, ...)'".into()),
                );
                continue;
            }
            self.define_var(&var[1..], value, false, pos, end);
        }
    }

    fn require(&mut self, kw: &Token) {
        let Some((config, base)) = self.paren_config(kw) else {
            return;
        };
        self.eat(';');
        for (arg, pos) in Self::args_with_pos(&config, base) {
            let w = words(&arg);
            let len = arg.len();
            match (w.first().map(String::as_str), w.len()) {
                (None, _) => {}
                (Some("compact_config"), 1) => self.requirements.push(ReqRaw {
                    kind: "compact_config".into(),
                    value: String::new(),
                    pos,
                    len,
                }),
                (Some("package"), 2) => self.requirements.push(ReqRaw {
                    kind: "package".into(),
                    value: unquote(&w[1]),
                    pos,
                    len,
                }),
                (Some("library"), 2) => {
                    let file = unquote(&w[1]);
                    self.require_library(&file, pos, len);
                }
                (Some(word), 1) if is_word(word) && word != "package" && word != "library" => {
                    self.requirements.push(ReqRaw {
                    kind: "capability".into(),
                    value: word.to_string(),
                    pos,
                    len,
                })
                }
                _ => self.error(
                    pos,
                    len,
                    format!("bad requirement '{arg}'"),
                    Some("expected 'package NAME', 'library FILE.click', 'compact_config', or a capability name".into()),
                ),
            }
        }
    }

    fn provide(&mut self, kw: &Token) {
        let Some((config, base)) = self.paren_config(kw) else {
            return;
        };
        for (arg, pos) in Self::args_with_pos(&config, base) {
            let w = words(&arg);
            if w.is_empty() {
                continue;
            }
            if w.len() == 1 && is_word(&w[0]) {
                self.provided.push(w[0].clone());
                self.requirements.push(ReqRaw {
                    kind: "provide".into(),
                    value: w[0].clone(),
                    pos,
                    len: arg.len(),
                });
            } else {
                self.error(
                    pos,
                    arg.len(),
                    format!("bad 'provide' argument '{arg}'"),
                    Some("expected a single capability name".into()),
                );
            }
        }
    }

    fn check_capabilities(&mut self) {
        let mut missing = Vec::new();
        for r in &self.requirements {
            if r.kind == "capability"
                && !self.provided.contains(&r.value)
                && !self.catalog.provides(&r.value)
            {
                missing.push((r.pos, r.len, r.value.clone()));
            }
        }
        for (pos, len, v) in missing {
            self.error(
                pos,
                len,
                format!("requirement '{v}' is not available"),
                Some(format!("this driver does not provide '{v}'")),
            );
        }
    }

    fn require_library(&mut self, file: &str, pos: Pos, len: usize) {
        if self.scopes.len() > 1 {
            self.error(
                pos,
                len,
                "'require(library ...)' must be used at file scope".into(),
                None,
            );
            return;
        }
        if self.library_depth >= MAX_LIBRARY_DEPTH {
            self.error(
                pos,
                len,
                format!("libraries nested too deeply (limit {MAX_LIBRARY_DEPTH})"),
                None,
            );
            return;
        }
        let src = self.lex.src();
        let source = self.sm.get(src);
        let base: PathBuf = match &source.path {
            Some(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
            None => Path::new(&*source.name)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        };
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        let mut candidates = Vec::new();
        if Path::new(file).is_absolute() {
            candidates.push(PathBuf::from(file));
        } else {
            candidates.push(base.join(file));
            candidates.extend(self.clickpath.iter().map(|d| d.join(file)));
        }
        let Some(found) = candidates.iter().find(|p| p.is_file()).cloned() else {
            let searched: Vec<String> =
                candidates.iter().map(|p| p.display().to_string()).collect();
            self.error(
                pos,
                len,
                format!("library '{file}' not found"),
                Some(format!("searched: {}", searched.join(", "))),
            );
            return;
        };
        let canonical = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
        if self.libraries.contains(&canonical) {
            return;
        }
        self.libraries.push(canonical);
        let text = match std::fs::read(&found) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                self.error(
                    pos,
                    len,
                    format!("cannot read library '{}': {e}", found.display()),
                    None,
                );
                return;
            }
        };
        let display = found.display().to_string();
        self.requirements.push(ReqRaw {
            kind: "library".into(),
            value: display.clone(),
            pos,
            len,
        });
        let lsrc = self.sm.add(&display, Some(found), &text);
        self.lex.push(&self.sm, lsrc);
        self.library_depth += 1;
        let saved_group = std::mem::replace(&mut self.group_depth, 0);
        self.statements(Ctx::File);
        self.group_depth = saved_group;
        self.library_depth -= 1;
        self.lex.pop();
    }
}
