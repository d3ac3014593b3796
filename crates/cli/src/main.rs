//! `linerate`: run, check, flatten and inspect Click configurations; talk to
//! a running router; and, invoked as `click` (or `linerate click`), behave as
//! Click's user-level driver.

mod bench;
mod click;
mod load;
mod model;
mod run;

use clap::{ArgAction, Parser, Subcommand};
use load::{split_var, Source};
use run::RunArgs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "linerate",
    version,
    about = "A Click-compatible packet-processing framework"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
struct RunOpts {
    /// Configuration file, then VAR=VALUE definitions.
    words: Vec<String>,
    /// Use EXPR as the configuration.
    #[arg(short = 'e', long = "expression")]
    expr: Option<String>,
    /// Read the configuration from FILE.
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
    /// Print handler ELEMENT.H after the run (repeatable), like `click -h`.
    #[arg(short = 'h', long = "handler")]
    handlers: Vec<String>,
    /// Check and set up the configuration, but do not run it.
    #[arg(short = 'q', long = "quit")]
    quit: bool,
    /// Number of threads.
    #[arg(short = 'j', long = "threads", default_value_t = 1)]
    threads: usize,
    /// Run a copy of the whole graph on every thread; sources spread packets by flow hash.
    #[arg(long)]
    replicate: bool,
    /// Default BURST of sources and pulling tasks (default 64; `click` uses 1, Click's).
    #[arg(long)]
    burst: Option<usize>,
    /// Run on simulated time.
    #[arg(long)]
    simtime: bool,
    /// Serve handlers on this Unix socket (Click's ControlSocket protocol).
    #[arg(long = "ctl")]
    ctl: Vec<PathBuf>,
    /// Serve handlers on this TCP port of 127.0.0.1 (ControlSocket protocol).
    #[arg(short = 'p', long = "port")]
    ports: Vec<u16>,
    /// Serve handlers as JSON and /metrics over HTTP on ADDR (e.g. 127.0.0.1:9100).
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Write the flattened configuration to FILE (`-` for standard output).
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// Do not print the end-of-run summary.
    #[arg(long)]
    no_summary: bool,
    /// Keep SCION step elements as written (by default a complete step
    /// graph runs as one fused SCIONRouter: the same frames and handlers).
    #[arg(long)]
    no_fuse: bool,
    /// Directory to search for `require(library ...)` files (repeatable).
    #[arg(short = 'C', long = "clickpath")]
    clickpath: Vec<PathBuf>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

#[derive(clap::Args, Debug)]
struct ConfOpts {
    /// Configuration file (`-` for standard input), then VAR=VALUE definitions.
    words: Vec<String>,
    /// Use EXPR as the configuration.
    #[arg(short = 'e', long = "expression")]
    expr: Option<String>,
    /// Directory to search for `require(library ...)` files (repeatable).
    #[arg(short = 'C', long = "clickpath")]
    clickpath: Vec<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a configuration.
    Run(RunOpts),
    /// Check a configuration: print errors and warnings only.
    Check(ConfOpts),
    /// Print the flattened configuration (like click-flatten).
    Flatten(ConfOpts),
    /// Print the configuration graph in Graphviz DOT.
    Graph(ConfOpts),
    /// List element classes, or print one class's documentation.
    Elements {
        /// A class name.
        class: Option<String>,
        /// Print the whole reference in Markdown (docs/elements.md).
        #[arg(long)]
        markdown: bool,
    },
    /// Read or write a handler of a running router.
    Ctl {
        /// Unix socket path, or HOST:PORT.
        socket: String,
        /// `read` or `write`.
        op: String,
        /// ELEMENT.HANDLER.
        handler: String,
        /// Value to write.
        value: Option<String>,
    },
    /// Performance model: measure C, P and H; predict the cores a line rate needs.
    #[command(subcommand)]
    Model(model::ModelCmd),
    /// Benchmarks: `linerate bench elements` prints the per-element table.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Behave as Click's `click` driver (all following arguments are Click's).
    #[command(disable_help_flag = true)]
    Click {
        /// Click command-line arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `X=value` command-line variables.
type Vars = Vec<(String, String)>;

/// Write `s` to standard output; on failure (a closed pipe, a full disk)
/// report it and return false instead of panicking.
pub(crate) fn write_stdout(s: &str) -> bool {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => false,
        Err(e) => {
            eprintln!("linerate: standard output: {e}");
            false
        }
    }
}

fn source_and_vars(
    words: &[String],
    expr: Option<String>,
    file: Option<PathBuf>,
) -> Result<(Option<Source>, Vars), String> {
    let mut src = match (expr, file) {
        (Some(_), Some(_)) => return Err("router configuration specified twice".into()),
        (Some(e), None) => Some(Source::Expr(e)),
        (None, Some(f)) => Some(Source::File(f)),
        (None, None) => None,
    };
    let mut vars = Vec::new();
    for w in words {
        if let Some(v) = split_var(w) {
            vars.push(v);
        } else if src.is_none() {
            src = Some(Source::File(PathBuf::from(w)));
        } else {
            return Err(format!(
                "unexpected argument '{w}' (configuration already given)"
            ));
        }
    }
    Ok((src, vars))
}

fn conf_cmd(o: ConfOpts, what: &str) -> i32 {
    let reg = linerate_elements::registry();
    let (src, vars) = match source_and_vars(&o.words, o.expr, None) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("linerate: {e}");
            return 1;
        }
    };
    let Some(src) = src else {
        eprintln!("linerate: no configuration given");
        return 1;
    };
    match what {
        "check" => match load::build(&src, &vars, &reg, Default::default(), &o.clickpath, false) {
            Ok((c, _, _)) => {
                for w in &c.warnings {
                    eprint!("{w}");
                }
                0
            }
            Err(d) => {
                eprint!("{d}");
                1
            }
        },
        _ => match load::parse(&src, &vars, &reg, &o.clickpath) {
            Ok(c) => {
                let text = if what == "flatten" {
                    c.to_click()
                } else {
                    c.to_dot()
                };
                i32::from(!write_stdout(&text))
            }
            Err(d) => {
                eprint!("{}", load::with_snippets(d, &src));
                1
            }
        },
    }
}

fn elements_cmd(class: Option<String>, markdown: bool) -> i32 {
    let reg = linerate_elements::registry();
    if markdown {
        return i32::from(!write_stdout(&linerate_elements::reference_markdown(&reg)));
    }
    match class {
        None => {
            let list: String = reg.classes().map(|c| format!("{}\n", c.name)).collect();
            i32::from(!write_stdout(&list))
        }
        Some(name) => match reg.get(&name) {
            Some(c) => {
                let text = format!(
                    "{} — ports {}, processing {}\n\n{}",
                    c.name, c.port_count, c.processing, c.doc
                );
                i32::from(!write_stdout(&text))
            }
            None => {
                eprintln!("linerate: no element class '{name}'");
                1
            }
        },
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let invoked_as = argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|s| s.to_string_lossy().to_string());
    if invoked_as.as_deref() == Some("click") {
        return ExitCode::from(click::main(&argv[1..]) as u8);
    }
    let cli = Cli::parse();
    let status = match cli.cmd {
        Cmd::Run(o) => {
            let (source, vars) = match source_and_vars(&o.words, o.expr, o.file) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("linerate: {e}");
                    return ExitCode::from(1);
                }
            };
            let args = RunArgs {
                source,
                vars,
                handlers: o.handlers,
                quit: o.quit,
                threads: o.threads,
                replicate: o.replicate,
                simtime: o.simtime,
                ctl: o.ctl,
                ports: o.ports,
                http: o.http,
                output: o.output,
                summary: !o.no_summary,
                warnings: true,
                clickpath: o.clickpath,
                burst: o.burst,
                fuse: !o.no_fuse,
                ..RunArgs::default()
            };
            run::run(&args, &linerate_elements::registry())
        }
        Cmd::Check(o) => conf_cmd(o, "check"),
        Cmd::Flatten(o) => conf_cmd(o, "flatten"),
        Cmd::Graph(o) => conf_cmd(o, "graph"),
        Cmd::Elements { class, markdown } => elements_cmd(class, markdown),
        Cmd::Ctl {
            socket,
            op,
            handler,
            value,
        } => {
            let v = match (op.as_str(), value) {
                ("read", None) => None,
                ("write", v) => Some(v.unwrap_or_default()),
                _ => {
                    eprintln!("linerate ctl: use 'read HANDLER' or 'write HANDLER [VALUE]'");
                    return ExitCode::from(1);
                }
            };
            match linerate_ctl::client_call(&socket, &handler, v.as_deref()) {
                Ok(out) => i32::from(!write_stdout(&out)),
                Err(e) => {
                    eprintln!("linerate ctl: {e}");
                    1
                }
            }
        }
        Cmd::Click { args } => click::main(&args),
        Cmd::Model(c) => model::main(c),
        Cmd::Bench(c) => bench::main(c),
    };
    // exit(2) keeps the low 8 bits: Click's -1 (a failed `-x` handler) is 255.
    ExitCode::from(status as u8)
}
