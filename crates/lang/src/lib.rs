//! The Click configuration language front end for linerate.
//!
//! [`parse_str`] and [`parse_file`] read a Click configuration: element
//! declarations (`name :: Class(config)`), connections (`a [1] -> [0] b`,
//! fan-in/fan-out, `=>` many-to-many), element groups `( ... )`, compound
//! element classes (`elementclass Name { $a | input -> ... -> output }`,
//! overloads with `||` and `|| ...`, anonymous `{ ... }`, synonyms),
//! `define`, `require` (packages, `library` files, capabilities) and
//! `provide`, comments and `#` line directives. The result is a flattened
//! [`Config`]: every compound expanded into `outer/inner` elements, every
//! anonymous element named `Class@N` as Click names it, variables
//! substituted, and connections resolved and deduplicated. Errors are
//! collected (parsing goes on after each one) and rendered like rustc's.
//!
//! Port counts and push/pull agreement are checked later by the runtime,
//! using the [`Location`] kept with every element and connection.

#![warn(missing_docs)]

mod diag;
mod expand;
mod flatten;
mod lexer;
mod output;
mod parser;
mod source;

use std::path::{Path, PathBuf};

pub use diag::{Diagnostic, Diagnostics, Location, Severity};

/// One element of the flattened configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementDecl {
    /// Full name, e.g. `cnt`, `Strip@3`, or `shaper/Queue@1`.
    pub name: String,
    /// Primitive class name (synonyms and compounds resolved).
    pub class: String,
    /// Configuration string with variables substituted (otherwise raw).
    pub config: String,
    /// Where the element was declared (for compound members: inside the
    /// compound's body).
    pub loc: Location,
}

/// A connection of the flattened configuration, by element index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// Index of the source element in [`Config::elements`].
    pub from: usize,
    /// Output port of the source element.
    pub from_port: usize,
    /// Index of the destination element in [`Config::elements`].
    pub to: usize,
    /// Input port of the destination element.
    pub to_port: usize,
    /// The `->` or `=>` that made this connection.
    pub loc: Location,
}

/// A `require` or `provide` entry. `kind` is `package`, `library` (value:
/// the file loaded), `capability`, `compact_config` (empty value), or
/// `provide`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// Kind of entry.
    pub kind: String,
    /// Its argument.
    pub value: String,
    /// Where it was written.
    pub loc: Location,
}

/// A parsed, flattened configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Elements in Click's order: top-level elements first, then compound
    /// members as compounds are expanded.
    pub elements: Vec<ElementDecl>,
    /// Connections, deduplicated and sorted by (from, from_port, to, to_port).
    pub connections: Vec<Connection>,
    /// `require` and `provide` entries in order.
    pub requirements: Vec<Requirement>,
    /// Warnings found while parsing.
    pub warnings: Vec<Diagnostic>,
}

impl Config {
    /// Index of the element called `name`.
    pub fn element_index(&self, name: &str) -> Option<usize> {
        self.elements.iter().position(|e| e.name == name)
    }

    /// The flattened configuration in Click syntax, as `click-flatten`
    /// prints it: requirements, declarations, then connection chains.
    pub fn to_click(&self) -> String {
        output::to_click(self)
    }

    /// A Graphviz DOT graph; each node shows its input and output ports.
    pub fn to_dot(&self) -> String {
        output::to_dot(self)
    }
}

/// What the runtime knows about element classes and capabilities; the
/// parser uses it to resolve classes and to suggest names in errors.
pub trait ClassCatalog {
    /// Whether `class` is a primitive (built-in) element class.
    fn is_primitive(&self, class: &str) -> bool;
    /// All primitive class names (for "did you mean" suggestions).
    fn class_names(&self) -> Vec<String>;
    /// Keywords `class` accepts (for future suggestions).
    fn keywords(&self, class: &str) -> Vec<String> {
        let _ = class;
        vec![]
    }
    /// Whether the driver provides `capability` (checked by `require`).
    fn provides(&self, capability: &str) -> bool;
    /// Whether `class` interprets `$name` in its configuration itself, so an
    /// undefined variable there is not an error. By default: `Script` and
    /// `DriverManager`.
    fn expands_own_variables(&self, class: &str) -> bool {
        matches!(class, "Script" | "DriverManager")
    }
}

/// A [`ClassCatalog`] from fixed lists, for tools and tests.
#[derive(Clone, Debug, Default)]
pub struct SimpleCatalog {
    /// Primitive class names.
    pub classes: Vec<String>,
    /// Capabilities provided.
    pub capabilities: Vec<String>,
}

impl SimpleCatalog {
    /// A catalog with the given class names and no capabilities.
    pub fn new<I, S>(classes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        SimpleCatalog {
            classes: classes.into_iter().map(Into::into).collect(),
            capabilities: Vec::new(),
        }
    }
}

impl ClassCatalog for SimpleCatalog {
    fn is_primitive(&self, class: &str) -> bool {
        self.classes.iter().any(|c| c == class)
    }
    fn class_names(&self) -> Vec<String> {
        self.classes.clone()
    }
    fn provides(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }
}

/// Options for parsing.
pub struct ParseOptions<'a> {
    /// Command-line variables (`X=value`, given as `("X", "value")`); they
    /// override global `define`s.
    pub vars: Vec<(String, String)>,
    /// The classes and capabilities the runtime knows.
    pub catalog: &'a dyn ClassCatalog,
    /// Directories searched for `require(library FILE)` after the
    /// including file's directory.
    pub clickpath: Vec<PathBuf>,
}

impl<'a> ParseOptions<'a> {
    /// Options with no variables and no CLICKPATH.
    pub fn new(catalog: &'a dyn ClassCatalog) -> Self {
        ParseOptions {
            vars: Vec::new(),
            catalog,
            clickpath: Vec::new(),
        }
    }
}

fn run(
    text: &str,
    name: &str,
    path: Option<PathBuf>,
    opts: &ParseOptions,
) -> Result<Config, Diagnostics> {
    let mut p = parser::Parser::new(opts.catalog, opts.clickpath.clone());
    let top = p.parse(text, name, path);
    let (elements, connections) = flatten::flatten(&mut p, top, &opts.vars);
    if p.diags.iter().any(|d| d.severity == Severity::Error) {
        return Err(Diagnostics(p.diags));
    }
    let requirements = p
        .requirements
        .iter()
        .map(|r| Requirement {
            kind: r.kind.clone(),
            value: r.value.clone(),
            loc: p.sm.location(r.pos),
        })
        .collect();
    Ok(Config {
        elements,
        connections,
        requirements,
        warnings: p.diags,
    })
}

/// Parses and flattens configuration `text`; `filename` is used in
/// locations and to find `require(library ...)` files. Never panics, for
/// any input.
pub fn parse_str(text: &str, filename: &str, opts: &ParseOptions) -> Result<Config, Diagnostics> {
    run(text, filename, Some(PathBuf::from(filename)), opts)
}

/// Reads, parses and flattens the configuration file at `path`. Bytes that
/// are not UTF-8 are replaced.
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<Config, Diagnostics> {
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => run(
            &String::from_utf8_lossy(&bytes),
            &name,
            Some(path.to_path_buf()),
            opts,
        ),
        Err(e) => Err(Diagnostics(vec![Diagnostic {
            severity: Severity::Error,
            loc: Location {
                file: name.as_str().into(),
                line: 1,
                column: 1,
            },
            message: format!("cannot read '{name}': {e}"),
            snippet: None,
            span_len: 1,
            help: None,
        }])),
    }
}
