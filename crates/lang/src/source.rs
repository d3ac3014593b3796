//! Source texts and the mapping from byte offsets to reported locations,
//! honouring `# LINE "file"` directives.

use std::path::PathBuf;
use std::sync::Arc;

use crate::diag::{Diagnostic, Location, Severity};

/// A byte offset in one source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub src: usize,
    pub off: usize,
}

impl Pos {
    /// The position `delta` bytes further on in the same source.
    pub fn plus(self, delta: usize) -> Pos {
        Pos {
            src: self.src,
            off: self.off.saturating_add(delta),
        }
    }
}

/// A line directive: physical lines from `phys_line` (0-based) on are
/// reported as `file`:`line`, `line + 1`, ...
struct Directive {
    phys_line: usize,
    file: Arc<str>,
    line: u32,
}

/// One configuration text (the main file or a library).
pub(crate) struct Source {
    pub name: Arc<str>,
    pub path: Option<PathBuf>,
    pub text: Arc<str>,
    line_starts: Vec<usize>,
    directives: Vec<Directive>,
}

/// All sources read during one parse.
#[derive(Default)]
pub(crate) struct SourceMap {
    sources: Vec<Source>,
}

impl SourceMap {
    /// Registers a source text and returns its id.
    pub fn add(&mut self, name: &str, path: Option<PathBuf>, text: &str) -> usize {
        let b = text.as_bytes();
        let mut line_starts = vec![0];
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\n' => line_starts.push(i + 1),
                b'\r' => {
                    if b.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    line_starts.push(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        self.sources.push(Source {
            name: Arc::from(name),
            path,
            text: Arc::from(text),
            line_starts,
            directives: Vec::new(),
        });
        self.sources.len() - 1
    }

    /// The source with id `src`.
    pub fn get(&self, src: usize) -> &Source {
        &self.sources[src]
    }

    /// The 0-based physical line holding byte `off` of source `src`.
    pub fn phys_line(&self, src: usize, off: usize) -> usize {
        let s = &self.sources[src];
        s.line_starts
            .partition_point(|&st| st <= off)
            .saturating_sub(1)
    }

    /// Records a line directive: physical line `phys_line` and later ones
    /// are reported as `file`:`line` onwards. An empty `file` means the
    /// source's own name; no `file` keeps the name in effect.
    pub fn add_directive(&mut self, src: usize, phys_line: usize, file: Option<&str>, line: u32) {
        let s = &mut self.sources[src];
        if let Some(last) = s.directives.last() {
            if last.phys_line >= phys_line {
                // Already recorded (the text was lexed twice).
                return;
            }
        }
        let file = match file {
            Some("") => s.name.clone(),
            Some(f) => Arc::from(f),
            // No file name: keep the one in effect.
            None => s
                .directives
                .last()
                .map_or_else(|| s.name.clone(), |d| d.file.clone()),
        };
        s.directives.push(Directive {
            phys_line,
            file,
            line,
        });
    }

    fn clamp(&self, pos: Pos) -> (usize, usize) {
        let text = &self.sources[pos.src].text;
        let mut off = pos.off.min(text.len());
        while off > 0 && !text.is_char_boundary(off) {
            off -= 1;
        }
        (pos.src, off)
    }

    /// The reported location of `pos`.
    pub fn location(&self, pos: Pos) -> Location {
        let (src, off) = self.clamp(pos);
        let s = &self.sources[src];
        let pl = self.phys_line(src, off);
        let start = s.line_starts[pl];
        let column = s.text[start..off].chars().count() as u32 + 1;
        let di = s.directives.partition_point(|d| d.phys_line <= pl);
        let (file, line) = if di == 0 {
            (s.name.clone(), pl as u32 + 1)
        } else {
            let d = &s.directives[di - 1];
            (
                d.file.clone(),
                d.line.saturating_add((pl - d.phys_line) as u32),
            )
        };
        Location { file, line, column }
    }

    /// Byte range of the physical line holding `pos` (without its line end).
    fn line_range(&self, src: usize, off: usize) -> (usize, usize) {
        let s = &self.sources[src];
        let pl = self.phys_line(src, off);
        let start = s.line_starts[pl];
        let mut end = s.line_starts.get(pl + 1).copied().unwrap_or(s.text.len());
        let b = s.text.as_bytes();
        while end > start && (b[end - 1] == b'\n' || b[end - 1] == b'\r') {
            end -= 1;
        }
        (start, end)
    }

    /// Builds a diagnostic for the `len` bytes of text at `pos`.
    pub fn diag(
        &self,
        severity: Severity,
        pos: Pos,
        len: usize,
        message: String,
        help: Option<String>,
    ) -> Diagnostic {
        let loc = self.location(pos);
        let (src, off) = self.clamp(pos);
        let (start, end) = self.line_range(src, off);
        let text = &self.sources[src].text;
        let mut span_end = off.saturating_add(len).min(end).max(off);
        while span_end > off && !text.is_char_boundary(span_end) {
            span_end -= 1;
        }
        let span_len = text[off..span_end].chars().count().max(1) as u32;
        Diagnostic {
            severity,
            loc,
            message,
            snippet: Some(text[start..end].to_string()),
            span_len,
            help,
        }
    }
}
