//! Diagnostics: source locations, errors and warnings, and their rustc-like
//! rendering, plus "did you mean" suggestions.

use std::fmt;
use std::sync::Arc;

/// A position in a configuration file, as Click reports it (1-based line and
/// column). `#` line directives change `file` and `line`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// File name as given to the parser or named by a line directive.
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The configuration is rejected.
    Error,
    /// The configuration is accepted, but something looks wrong.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One error or warning with its location and the offending source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Where the offending text starts.
    pub loc: Location,
    /// What is wrong, e.g. `unknown element class 'Countr'`.
    pub message: String,
    /// The source line holding the offending text (without its line end).
    pub snippet: Option<String>,
    /// Length of the offending text in characters (at least 1).
    pub span_len: u32,
    /// A hint such as `did you mean 'Counter'?`.
    pub help: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {}: {}", self.loc, self.severity, self.message)?;
        let line_no = self.loc.line.to_string();
        let pad = " ".repeat(line_no.len());
        if let Some(snippet) = &self.snippet {
            writeln!(f, "    {line_no} | {snippet}")?;
            // Keep tabs so the carets line up under the text.
            let lead: String = snippet
                .chars()
                .take(self.loc.column.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            writeln!(
                f,
                "    {pad} | {lead}{}",
                "^".repeat(self.span_len.max(1) as usize)
            )?;
        }
        if let Some(help) = &self.help {
            writeln!(f, "    {pad} = help: {help}")?;
        }
        Ok(())
    }
}

/// A list of diagnostics, as returned when a configuration has errors. It
/// holds the warnings found as well, in the order they were found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Number of errors (not warnings).
    pub fn error_count(&self) -> usize {
        self.0
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    /// The messages alone, in order; handy in tests and logs.
    pub fn messages(&self) -> Vec<String> {
        self.0.iter().map(|d| d.message.clone()).collect()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The candidate closest to `name` by edit distance, if it is close enough
/// to be a likely typo. Ties go to the alphabetically first candidate.
pub(crate) fn closest<'a, I>(name: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let lname = name.to_lowercase();
    let limit = name.chars().count().div_ceil(3);
    let limit = limit.max(1);
    let mut best: Option<(usize, &str)> = None;
    for cand in candidates {
        if cand == name || cand.is_empty() {
            continue;
        }
        let d = strsim::levenshtein(&lname, &cand.to_lowercase());
        // A difference in case only is always a likely typo.
        let d = if d == 0 { 0 } else { d.max(1) };
        if d > limit {
            continue;
        }
        match best {
            Some((bd, bc)) if bd < d || (bd == d && bc <= cand) => {}
            _ => best = Some((d, cand)),
        }
    }
    best.map(|(_, c)| c.to_string())
}
