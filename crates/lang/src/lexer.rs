//! The Click lexer: identifiers, variables, punctuation, keywords, comments,
//! `#` line directives, and raw configuration strings.

use std::sync::Arc;

use crate::diag::{Diagnostic, Severity};
use crate::source::{Pos, SourceMap};

/// Kinds of lexemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident,
    Var,
    Arrow,
    DArrow,
    Colon2,
    Bar2,
    Dots,
    Elementclass,
    Require,
    Provide,
    Define,
    Char(char),
    Eof,
}

/// A lexeme and its byte range in the current source.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: Tok,
    pub src: usize,
    pub start: usize,
    pub end: usize,
}

impl Token {
    pub fn pos(&self) -> Pos {
        Pos {
            src: self.src,
            off: self.start,
        }
    }
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    pub fn is(&self, c: char) -> bool {
        self.kind == Tok::Char(c)
    }
}

/// Lexing state for one source.
struct State {
    src: usize,
    text: Arc<str>,
    pos: usize,
    pushback: Vec<Token>,
}

/// A stack of sources being lexed (libraries push a new one).
#[derive(Default)]
pub(crate) struct Lexer {
    states: Vec<State>,
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'@'
}

fn at_line_start(b: &[u8], s: usize) -> bool {
    s == 0 || b[s - 1] == b'\n' || b[s - 1] == b'\r'
}

impl Lexer {
    /// Starts lexing source `src`.
    pub fn push(&mut self, sm: &SourceMap, src: usize) {
        self.states.push(State {
            src,
            text: sm.get(src).text.clone(),
            pos: 0,
            pushback: Vec::new(),
        });
    }

    /// Stops lexing the innermost source.
    pub fn pop(&mut self) {
        self.states.pop();
    }

    /// Id of the source being lexed.
    pub fn src(&self) -> usize {
        self.states.last().map_or(0, |s| s.src)
    }

    fn st(&mut self) -> &mut State {
        // A state is always pushed before lexing starts.
        if self.states.is_empty() {
            self.states.push(State {
                src: 0,
                text: Arc::from(""),
                pos: 0,
                pushback: Vec::new(),
            });
        }
        let n = self.states.len() - 1;
        &mut self.states[n]
    }

    /// The text of a token.
    pub fn text(&self, t: &Token) -> &str {
        self.states
            .iter()
            .rev()
            .find(|s| s.src == t.src)
            .and_then(|s| s.text.get(t.start..t.end))
            .unwrap_or("")
    }

    /// Puts a token back; the next `lex` returns it.
    pub fn unlex(&mut self, t: Token) {
        self.st().pushback.push(t);
    }

    /// The next token.
    pub fn lex(&mut self, sm: &mut SourceMap, diags: &mut Vec<Diagnostic>) -> Token {
        if let Some(t) = self.st().pushback.pop() {
            return t;
        }
        self.raw(sm, diags)
    }

    /// The next token without consuming it.
    pub fn peek(&mut self, sm: &mut SourceMap, diags: &mut Vec<Diagnostic>) -> Token {
        let t = self.lex(sm, diags);
        self.unlex(t);
        t
    }

    /// Consumes the next token if it is the character `c`. When nothing is
    /// pushed back, a mismatch leaves the raw position untouched.
    pub fn eat(&mut self, c: char, sm: &mut SourceMap, diags: &mut Vec<Diagnostic>) -> bool {
        if let Some(t) = self.st().pushback.last().copied() {
            if t.is(c) {
                self.st().pushback.pop();
                return true;
            }
            return false;
        }
        let saved = self.st().pos;
        let t = self.raw(sm, diags);
        if t.is(c) {
            true
        } else {
            self.st().pos = saved;
            false
        }
    }

    fn raw(&mut self, sm: &mut SourceMap, diags: &mut Vec<Diagnostic>) -> Token {
        let (src, text, mut s) = {
            let st = self.st();
            (st.src, st.text.clone(), st.pos)
        };
        let b = text.as_bytes();
        let n = b.len();
        loop {
            while s < n && b[s].is_ascii_whitespace() {
                s += 1;
            }
            if s >= n {
                self.st().pos = n;
                return Token {
                    kind: Tok::Eof,
                    src,
                    start: n,
                    end: n,
                };
            }
            if b[s] == b'/' && s + 1 < n && b[s + 1] == b'/' {
                while s < n && b[s] != b'\n' && b[s] != b'\r' {
                    s += 1;
                }
            } else if b[s] == b'/' && s + 1 < n && b[s + 1] == b'*' {
                match find(b, s + 2, b"*/") {
                    Some(e) => s = e + 2,
                    None => {
                        diags.push(sm.diag(
                            Severity::Error,
                            Pos { src, off: s },
                            2,
                            "unterminated '/*' comment".into(),
                            Some("add '*/' to close the comment".into()),
                        ));
                        s = n;
                    }
                }
            } else if b[s] == b'#' && at_line_start(b, s) {
                s = line_directive(sm, diags, src, &text, s);
            } else {
                break;
            }
        }
        let start = s;
        let kind = if is_word(b[s]) {
            loop {
                s += 1;
                while s < n && is_word(b[s]) {
                    s += 1;
                }
                if !(s + 1 < n && b[s] == b'/' && is_word(b[s + 1])) {
                    break;
                }
            }
            match &text[start..s] {
                "elementclass" => Tok::Elementclass,
                "require" => Tok::Require,
                "provide" => Tok::Provide,
                "define" => Tok::Define,
                _ => Tok::Ident,
            }
        } else if b[s] == b'$'
            && s + 1 < n
            && (b[s + 1].is_ascii_alphanumeric() || b[s + 1] == b'_')
        {
            s += 1;
            while s < n && (b[s].is_ascii_alphanumeric() || b[s] == b'_') {
                s += 1;
            }
            Tok::Var
        } else if s + 1 < n && &b[s..s + 2] == b"->" {
            s += 2;
            Tok::Arrow
        } else if s + 1 < n && &b[s..s + 2] == b"=>" {
            s += 2;
            Tok::DArrow
        } else if s + 1 < n && &b[s..s + 2] == b"::" {
            s += 2;
            Tok::Colon2
        } else if s + 1 < n && &b[s..s + 2] == b"||" {
            s += 2;
            Tok::Bar2
        } else if s + 2 < n && &b[s..s + 3] == b"..." {
            s += 3;
            Tok::Dots
        } else {
            let c = text[s..].chars().next().unwrap_or('\0');
            s += c.len_utf8().max(1);
            Tok::Char(c)
        };
        self.st().pos = s;
        Token {
            kind,
            src,
            start,
            end: s,
        }
    }

    /// Reads a configuration string after an opening parenthesis `open`:
    /// everything up to the matching `)`, which is consumed. Parentheses in
    /// quotes and comments do not count. Line directives are removed.
    /// Returns the raw text, and whether the `)` was found.
    pub fn config(
        &mut self,
        open: &Token,
        sm: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
    ) -> (String, bool) {
        let (src, text) = {
            let st = self.st();
            st.pushback.clear();
            st.pos = open.end;
            (st.src, st.text.clone())
        };
        let b = text.as_bytes();
        let n = b.len();
        let mut out = String::new();
        let mut seg = open.end;
        let mut s = open.end;
        let mut depth = 1u32;
        let mut closed = false;
        while s < n {
            match b[s] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        closed = true;
                        break;
                    }
                }
                b'#' if s > 0 && (b[s - 1] == b'\n' || b[s - 1] == b'\r') => {
                    out.push_str(&text[seg..s]);
                    s = line_directive(sm, diags, src, &text, s);
                    seg = s;
                    continue;
                }
                b'/' if s + 1 < n && b[s + 1] == b'/' => {
                    while s < n && b[s] != b'\n' && b[s] != b'\r' {
                        s += 1;
                    }
                    continue;
                }
                b'/' if s + 1 < n && b[s + 1] == b'*' => {
                    s = find(b, s + 2, b"*/").map_or(n, |e| e + 2);
                    continue;
                }
                b'\'' | b'"' => {
                    s = skip_quote(b, s + 1, b[s]);
                    continue;
                }
                b'\\' if s + 1 < n && b[s + 1] == b'<' => {
                    s = skip_angle(b, s + 2);
                    continue;
                }
                _ => {}
            }
            s += 1;
        }
        let end = s.min(n);
        out.push_str(&text[seg.min(end)..end]);
        self.st().pos = if closed { end + 1 } else { n };
        (out, closed)
    }
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    if from >= b.len() {
        return None;
    }
    b[from..]
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| p + from)
}

/// Skips a quoted string whose body starts at `s`; returns the position
/// after the closing quote (or the end of the text).
fn skip_quote(b: &[u8], mut s: usize, endc: u8) -> usize {
    while s < b.len() {
        if b[s] == b'\\' && endc == b'"' && s + 1 < b.len() {
            if b[s + 1] == b'<' {
                s = skip_angle(b, s + 2);
                continue;
            }
            s += 2;
            continue;
        }
        if b[s] == endc {
            return s + 1;
        }
        s += 1;
    }
    b.len()
}

/// Skips a `\<hex>` block whose body starts at `s` (comments allowed).
fn skip_angle(b: &[u8], mut s: usize) -> usize {
    while s < b.len() {
        if b[s] == b'/' && s + 1 < b.len() && b[s + 1] == b'/' {
            while s < b.len() && b[s] != b'\n' && b[s] != b'\r' {
                s += 1;
            }
            continue;
        }
        if b[s] == b'/' && s + 1 < b.len() && b[s + 1] == b'*' {
            s = find(b, s + 2, b"*/").map_or(b.len(), |e| e + 2);
            continue;
        }
        if b[s] == b'>' {
            return s + 1;
        }
        s += 1;
    }
    b.len()
}

/// Processes a `# LINE "file"` (or `# line LINE "file"`) directive at `s`
/// and returns the position of the end of its line.
fn line_directive(
    sm: &mut SourceMap,
    diags: &mut Vec<Diagnostic>,
    src: usize,
    text: &str,
    start: usize,
) -> usize {
    let b = text.as_bytes();
    let n = b.len();
    let eol = |mut s: usize| {
        while s < n && b[s] != b'\n' && b[s] != b'\r' {
            s += 1;
        }
        s
    };
    let mut s = start + 1;
    while s < n && (b[s] == b' ' || b[s] == b'\t') {
        s += 1;
    }
    if s + 4 < n && &b[s..s + 4] == b"line" && (b[s + 4] == b' ' || b[s + 4] == b'\t') {
        s += 5;
        while s < n && (b[s] == b' ' || b[s] == b'\t') {
            s += 1;
        }
    }
    if s >= n || !b[s].is_ascii_digit() {
        let end = eol(s);
        diags.push(
            sm.diag(
                Severity::Error,
                Pos { src, off: start },
                end - start,
                "unknown preprocessor directive".into(),
                Some(
                    "a line starting with '#' must be a line directive like '# 12 \"file.click\"'"
                        .into(),
                ),
            ),
        );
        return end;
    }
    let mut line: u32 = 0;
    while s < n && b[s].is_ascii_digit() {
        line = line
            .saturating_mul(10)
            .saturating_add(u32::from(b[s] - b'0'));
        s += 1;
    }
    while s < n && (b[s] == b' ' || b[s] == b'\t') {
        s += 1;
    }
    let mut file: Option<String> = None;
    if s < n && b[s] == b'"' {
        let mut name = Vec::new();
        s += 1;
        while s < n && b[s] != b'"' && b[s] != b'\n' && b[s] != b'\r' {
            if b[s] == b'\\' && s + 1 < n && b[s + 1] != b'\n' && b[s + 1] != b'\r' {
                s += 1;
            }
            name.push(b[s]);
            s += 1;
        }
        file = Some(String::from_utf8_lossy(&name).into_owned());
    }
    let end = eol(s);
    let next_line = sm.phys_line(src, start) + 1;
    sm.add_directive(src, next_line, file.as_deref(), line);
    end
}
