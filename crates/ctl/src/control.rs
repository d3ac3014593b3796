//! Handler lookup and calls shared by the control socket and HTTP servers,
//! with Click's `ControlSocket` reply codes.

use linerate_runtime::element::hflags;
use linerate_runtime::{HandlerSpec, RouterHandle};
use std::sync::Arc;

/// The command succeeded.
pub(crate) const CS_OK: u16 = 200;
/// Syntax error in a command.
pub(crate) const CS_SYNTAX: u16 = 500;
/// Unknown or unsupported command.
pub(crate) const CS_UNIMPLEMENTED: u16 = 501;
/// No element with that name or number.
pub(crate) const CS_NO_SUCH_ELEMENT: u16 = 510;
/// No handler with that name, or not readable/writable (`CHECK*`).
pub(crate) const CS_NO_SUCH_HANDLER: u16 = 511;
/// The handler reported an error.
pub(crate) const CS_HANDLER_ERROR: u16 = 520;
/// `WRITEDATA`/`READDATA` announced more data than the server accepts.
pub(crate) const CS_DATA_TOO_BIG: u16 = 521;
/// Reading a write-only handler or writing a read-only one.
pub(crate) const CS_PERMISSION: u16 = 530;

/// Router-wide facts served by the global handlers, which the router handle
/// does not know (the caller has them from parsing and the registry).
#[derive(Debug, Clone, Default)]
pub struct Globals {
    /// Value of the `version` handler, e.g. `0.1.0`.
    pub version: String,
    /// Value of the `config` handler: the configuration as written.
    pub config: String,
    /// Value of the `flatconfig` handler: the flattened configuration.
    pub flatconfig: String,
    /// Value of the `classes` handler: every element class, one per line.
    pub classes: Vec<String>,
}

/// Global handlers with their flags, in the order `handlers` lists them.
const GLOBAL_HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("version"),
    HandlerSpec::read("list"),
    HandlerSpec::read("classes"),
    HandlerSpec::read("config"),
    HandlerSpec::read("flatconfig"),
    HandlerSpec::read("packages"),
    HandlerSpec::read("requirements"),
    HandlerSpec::read("handlers"),
    HandlerSpec::write("stop"),
];

/// Why a handler call failed: a Click reply code, a summary line and the
/// handler's own messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// Click `ControlSocket` reply code (5xx).
    pub code: u16,
    /// Summary, e.g. `No element named 'x'`.
    pub message: String,
    /// Further lines, e.g. the handler's error text.
    pub details: Vec<String>,
}

impl Failure {
    pub(crate) fn new(code: u16, message: String) -> Failure {
        Failure {
            code,
            message,
            details: Vec::new(),
        }
    }

    /// Summary and details on one line.
    pub(crate) fn one_line(&self) -> String {
        let mut s = self.message.clone();
        for (i, d) in self.details.iter().enumerate() {
            s.push_str(if i == 0 { ": " } else { "; " });
            s.push_str(d);
        }
        s
    }
}

/// What a handler name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A global handler.
    Global(String),
    /// Handler `handler` of element `index`.
    Element { index: usize, handler: String },
}

/// Kind of a handler check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Read the global handler `name` (`version`, `list`, `classes`, `config`,
/// `flatconfig`, `handlers`, ...), as `click -h name` does; `None` if there
/// is no readable global handler of that name.
pub fn read_global(handle: &RouterHandle, globals: Arc<Globals>, name: &str) -> Option<String> {
    let readable = GLOBAL_HANDLERS
        .iter()
        .any(|h| h.name == name && h.flags & hflags::READ != 0);
    readable.then(|| Control::new(handle.clone(), globals).read_global(name))
}

/// A router handle and the globals.
pub(crate) struct Control {
    handle: RouterHandle,
    globals: Arc<Globals>,
}

impl Control {
    /// A control for `handle`.
    pub(crate) fn new(handle: RouterHandle, globals: Arc<Globals>) -> Control {
        Control { handle, globals }
    }

    /// The router handle.
    pub(crate) fn handle(&self) -> &RouterHandle {
        &self.handle
    }

    /// Handlers of element `e` (generic ones included; fixed when the router
    /// was built, flags included, whether or not it runs).
    pub(crate) fn handlers_of(&self, e: usize) -> Vec<HandlerSpec> {
        self.handle.handlers_of(e)
    }

    /// Index of the element called `name`, or numbered `name` from 1.
    pub(crate) fn find_element(&self, name: &str) -> Option<usize> {
        let els = self.handle.elements();
        els.iter().position(|e| e.name == name).or_else(|| {
            let n: usize = name.parse().ok()?;
            (n >= 1 && n <= els.len() && !name.starts_with('+')).then(|| n - 1)
        })
    }

    /// Resolve a Click handler name: `elem.h`, `N.h`, `h`, `.h` or `0.h`.
    pub(crate) fn resolve(&self, full: &str) -> Result<Target, Failure> {
        let canon = full
            .strip_prefix('.')
            .or_else(|| full.strip_prefix("0."))
            .unwrap_or(full);
        let first_dot = match canon.find('.') {
            None => return Ok(Target::Global(canon.to_string())),
            Some(d) => d,
        };
        // Element names never contain dots in Click; try every split anyway
        // so a dotted name still resolves, the first split winning.
        for (d, _) in canon.match_indices('.') {
            if let Some(index) = self.find_element(&canon[..d]) {
                return Ok(Target::Element {
                    index,
                    handler: canon[d + 1..].to_string(),
                });
            }
        }
        Err(Failure::new(
            CS_NO_SUCH_ELEMENT,
            format!("No element named '{}'", &canon[..first_dot]),
        ))
    }

    /// Flags of the handler `target` names, or 511.
    fn flags(&self, target: &Target, full: &str) -> Result<u8, Failure> {
        let found = match target {
            Target::Global(h) => GLOBAL_HANDLERS
                .iter()
                .find(|s| s.name == h)
                .map(|s| s.flags),
            Target::Element { index, handler } => self
                .handlers_of(*index)
                .iter()
                .find(|s| s.name == handler)
                .map(|s| s.flags),
        };
        found.ok_or_else(|| Failure::new(CS_NO_SUCH_HANDLER, format!("No handler named '{full}'")))
    }

    /// Click's `CHECKREAD`/`CHECKWRITE`: the success message, or why not.
    pub(crate) fn check(&self, full: &str, access: Access) -> Result<String, Failure> {
        let target = self.resolve(full)?;
        let flags = self.flags(&target, full)?;
        let (bit, word) = match access {
            Access::Read => (hflags::READ, "Read"),
            Access::Write => (hflags::WRITE, "Write"),
        };
        if flags & bit != 0 {
            Ok(format!("{word} handler '{full}' OK"))
        } else {
            let not = if access == Access::Read {
                "readable"
            } else {
                "writable"
            };
            Err(Failure::new(
                CS_NO_SUCH_HANDLER,
                format!("Handler '{full}' not {not}"),
            ))
        }
    }

    /// Read handler `full`. linerate's read handlers take no parameters, so
    /// a non-empty `param` is a handler error.
    pub(crate) fn read(&self, full: &str, param: &str) -> Result<String, Failure> {
        let target = self.resolve(full)?;
        let flags = self.flags(&target, full)?;
        if flags & hflags::READ == 0 {
            return Err(Failure::new(
                CS_PERMISSION,
                format!("Handler '{full}' write-only"),
            ));
        }
        if !param.trim().is_empty() {
            return Err(Failure {
                code: CS_HANDLER_ERROR,
                message: format!("Read handler '{full}' error"),
                details: vec!["read handler does not take parameters".to_string()],
            });
        }
        match target {
            Target::Global(h) => {
                // Values end in a newline unless empty, like element handlers'.
                let mut v = self.read_global(&h);
                if !v.is_empty() && !v.ends_with('\n') {
                    v.push('\n');
                }
                Ok(v)
            }
            Target::Element { index, handler } => self
                .handle
                .call_elem(index, &handler, None)
                .map_err(|e| Failure {
                    code: CS_HANDLER_ERROR,
                    message: format!("Read handler '{full}' error"),
                    details: e.lines().map(str::to_string).collect(),
                }),
        }
    }

    /// Write `value` to handler `full`; the success message.
    pub(crate) fn write(&self, full: &str, value: &str) -> Result<String, Failure> {
        let target = self.resolve(full)?;
        let flags = self.flags(&target, full)?;
        if flags & hflags::WRITE == 0 {
            return Err(Failure::new(
                CS_PERMISSION,
                format!("Handler '{full}' read-only"),
            ));
        }
        let r = match target {
            // `stop` is the only global write handler.
            Target::Global(_) => {
                self.handle.stop();
                Ok(String::new())
            }
            Target::Element { index, handler } => {
                self.handle.call_elem(index, &handler, Some(value))
            }
        };
        match r {
            Ok(_) => Ok(format!("Write handler '{full}' OK")),
            Err(e) => Err(Failure {
                code: CS_HANDLER_ERROR,
                message: format!("Write handler '{full}' error"),
                details: e.lines().map(str::to_string).collect(),
            }),
        }
    }

    /// Value of a readable global handler.
    fn read_global(&self, h: &str) -> String {
        let g = &self.globals;
        match h {
            "version" => g.version.clone(),
            "list" => {
                let els = self.handle.elements();
                let mut s = format!("{}\n", els.len());
                for e in els {
                    s.push_str(&e.name);
                    s.push('\n');
                }
                s
            }
            "classes" => g.classes.iter().map(|c| format!("{c}\n")).collect(),
            "config" => g.config.clone(),
            "flatconfig" => g.flatconfig.clone(),
            "handlers" => GLOBAL_HANDLERS
                .iter()
                .map(|s| {
                    format!(
                        "{}\t{}\n",
                        s.name,
                        if s.flags & hflags::READ != 0 {
                            "r"
                        } else {
                            "w"
                        }
                    )
                })
                .collect(),
            // `packages`, `requirements`: linerate has no packages.
            _ => String::new(),
        }
    }

    /// Global handlers and their flags.
    pub(crate) fn global_handlers(&self) -> &'static [HandlerSpec] {
        GLOBAL_HANDLERS
    }
}
