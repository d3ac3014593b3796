//! Loading a configuration: parse, build the router, render diagnostics with
//! the offending source line.

use linerate_lang::{parse_file, parse_str, Config, Diagnostics, ParseOptions};
use linerate_runtime::{Registry, Router, RouterOptions};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The configuration read from standard input, kept for diagnostics found
/// after parsing (standard input cannot be read twice).
static STDIN_TEXT: OnceLock<String> = OnceLock::new();

/// Where the configuration text comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file (`-` for standard input).
    File(PathBuf),
    /// An expression given with `-e`.
    Expr(String),
}

impl Source {
    /// The name diagnostics use for this source.
    pub fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Expr(_) => "<expr>".to_string(),
        }
    }
}

/// Parse `src` with command-line variables `vars`.
pub fn parse(
    src: &Source,
    vars: &[(String, String)],
    reg: &Registry,
    clickpath: &[PathBuf],
) -> Result<Config, Diagnostics> {
    let opts = ParseOptions {
        vars: vars.to_vec(),
        catalog: reg,
        clickpath: clickpath.to_vec(),
    };
    match src {
        Source::File(p) if p.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| io_diag("<stdin>", e))?;
            parse_str(STDIN_TEXT.get_or_init(|| text), "<stdin>", &opts)
        }
        Source::File(p) => parse_file(p, &opts),
        Source::Expr(e) => parse_str(e, "<expr>", &opts),
    }
}

fn io_diag(name: &str, e: std::io::Error) -> Diagnostics {
    Diagnostics(vec![linerate_lang::Diagnostic {
        severity: linerate_lang::Severity::Error,
        loc: linerate_lang::Location {
            file: name.into(),
            line: 0,
            column: 0,
        },
        message: e.to_string(),
        snippet: None,
        span_len: 0,
        help: None,
    }])
}

/// Fill in the source line of diagnostics that lack one (those produced
/// after parsing, by the router).
pub fn with_snippets(mut d: Diagnostics, src: &Source) -> Diagnostics {
    let expr_text = match src {
        Source::Expr(e) => Some(e.clone()),
        _ => None,
    };
    for x in d.0.iter_mut() {
        if x.snippet.is_some() || x.loc.line == 0 {
            continue;
        }
        let text = if &*x.loc.file == "<expr>" {
            expr_text.clone()
        } else if &*x.loc.file == "<stdin>" {
            STDIN_TEXT.get().cloned()
        } else {
            std::fs::read_to_string(Path::new(&*x.loc.file)).ok()
        };
        if let Some(t) = text {
            if let Some(line) = t.lines().nth(x.loc.line as usize - 1) {
                x.snippet = Some(line.to_string());
                x.span_len = x.span_len.max(1);
            }
        }
    }
    d
}

/// Parse and build a router. With `fuse`, complete SCION step graphs run as
/// one `SCIONRouter` (`linerate_elements::scion::fuse`); the notes say
/// which.
pub fn build(
    src: &Source,
    vars: &[(String, String)],
    reg: &Registry,
    opts: RouterOptions,
    clickpath: &[PathBuf],
    fuse: bool,
) -> Result<(Config, Router, Vec<String>), Diagnostics> {
    let mut config = parse(src, vars, reg, clickpath).map_err(|d| with_snippets(d, src))?;
    let notes = if fuse {
        linerate_elements::scion::fuse::fuse(&mut config)
    } else {
        Vec::new()
    };
    let router = Router::build(&config, reg, opts).map_err(|d| with_snippets(d, src))?;
    Ok((config, router, notes))
}

/// Split `X=value` command-line words.
pub fn split_var(s: &str) -> Option<(String, String)> {
    let (k, v) = s.split_once('=')?;
    let ok = !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| (k.to_string(), v.to_string()))
}
