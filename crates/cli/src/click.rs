//! The Click-compatible driver: `click [OPTION]... [ROUTERFILE] [VAR=VALUE]...`
//! with Click's options, output and exit statuses, so scripts and test
//! harnesses written for Click run unchanged.

use crate::load::{split_var, Source};
use crate::run::{run, RunArgs};
use std::path::PathBuf;

const USAGE: &str = "'Click' runs a Click router configuration at user level. It installs the
configuration, reporting any errors to standard error, and then generally runs
until interrupted.

Usage: click [OPTION]... [ROUTERFILE]

Options:
  -f, --file FILE               Read router configuration from FILE.
  -e, --expression EXPR         Use EXPR as router configuration.
  -p, --port PORT               Listen for control connections on TCP port.
  -u, --unix-socket FILE        Listen for control connections on Unix socket.
  -h, --handler ELEMENT.H       Call ELEMENT's read handler H after running
                                driver and print result to standard output.
  -x, --exit-handler ELEMENT.H  Use handler ELEMENT.H value for exit status.
  -o, --output FILE             Write flat configuration to FILE.
  -q, --quit                    Do not run driver.
  -t, --time                    Print information on how long driver took.
  -w, --no-warnings             Do not print warnings.
  -C, --clickpath PATH          Use PATH for CLICKPATH.
  -j, --threads N               Run N threads (linerate extension).
      --simtime                 Run on simulated time.
      --help                    Print this message and exit.
  -v, --version                 Print version number and exit.
";

fn short_usage() -> i32 {
    eprintln!("Usage: click [OPTION]... [ROUTERFILE]\nTry 'click --help' for more information.");
    1
}

/// Parse Click's command line and run; returns Click's exit status.
pub fn main(argv: &[String]) -> i32 {
    // Click's sources send one packet per task run: with batches of one,
    // packets interleave through the configuration exactly as in Click.
    let mut a = RunArgs {
        warnings: true,
        threads: 1,
        burst: Some(1),
        ..RunArgs::default()
    };
    let mut i = 0;
    let with_value = [
        "-f",
        "--file",
        "-e",
        "--expression",
        "-p",
        "--port",
        "-u",
        "--unix-socket",
        "-h",
        "--handler",
        "-x",
        "--exit-handler",
        "-o",
        "--output",
        "-C",
        "--clickpath",
        "-j",
        "--threads",
    ];
    while i < argv.len() {
        let arg = &argv[i];
        // Split `--opt=value` and `-Xvalue`.
        let (opt, inline): (String, Option<String>) = if let Some(rest) = arg.strip_prefix("--") {
            match rest.split_once('=') {
                Some((o, v)) => (format!("--{o}"), Some(v.to_string())),
                None => (arg.clone(), None),
            }
        } else if arg.starts_with('-') && arg.len() > 2 && with_value.contains(&&arg[..2]) {
            (arg[..2].to_string(), Some(arg[2..].to_string()))
        } else {
            (arg.clone(), None)
        };
        let needs = with_value.contains(&opt.as_str());
        let value = if needs {
            match inline {
                Some(v) => Some(v),
                None => {
                    i += 1;
                    match argv.get(i) {
                        Some(v) => Some(v.clone()),
                        None => {
                            eprintln!("click: '{opt}' requires an argument");
                            return short_usage();
                        }
                    }
                }
            }
        } else {
            None
        };
        let set_source = |a: &mut RunArgs, s: Source| -> bool {
            if a.source.is_some() {
                eprintln!("click: router configuration specified twice");
                return false;
            }
            a.source = Some(s);
            true
        };
        match opt.as_str() {
            "-f" | "--file" => {
                if !set_source(
                    &mut a,
                    Source::File(PathBuf::from(value.unwrap_or_default())),
                ) {
                    return short_usage();
                }
            }
            "-e" | "--expression" => {
                if !set_source(&mut a, Source::Expr(value.unwrap_or_default())) {
                    return short_usage();
                }
            }
            "-p" | "--port" => match value.as_deref().unwrap_or("").parse() {
                Ok(p) => a.ports.push(p),
                Err(_) => {
                    eprintln!("click: '{opt}' expects an integer");
                    return short_usage();
                }
            },
            "-u" | "--unix-socket" => a.ctl.push(PathBuf::from(value.unwrap_or_default())),
            "-h" | "--handler" => a.handlers.push(value.unwrap_or_default()),
            "-x" | "--exit-handler" => {
                if a.exit_handler.is_some() {
                    eprintln!("click: --exit-handler specified twice");
                    return short_usage();
                }
                a.exit_handler = value;
            }
            "-o" | "--output" => {
                if a.output.is_some() {
                    eprintln!("click: output file specified twice");
                    return short_usage();
                }
                a.output = value;
            }
            "-C" | "--clickpath" => a
                .clickpath
                .extend(std::env::split_paths(&value.unwrap_or_default())),
            "-j" | "--threads" => match value.as_deref().unwrap_or("").parse() {
                Ok(n) => a.threads = n,
                Err(_) => return short_usage(),
            },
            "-q" | "--quit" => a.quit = true,
            "-t" | "--time" => a.time = true,
            "-w" | "--no-warnings" => a.warnings = false,
            "--warnings" => a.warnings = true,
            "--simtime" => a.simtime = true,
            "--help" => {
                print!("{USAGE}");
                return 0;
            }
            "-v" | "--version" => {
                println!("click (linerate) {}", env!("CARGO_PKG_VERSION"));
                return 0;
            }
            "-" => {
                if !set_source(&mut a, Source::File(PathBuf::from("-"))) {
                    return short_usage();
                }
            }
            o if o.starts_with('-') => {
                eprintln!("click: unrecognized option '{o}'");
                return short_usage();
            }
            w => match split_var(w) {
                Some(v) => a.vars.push(v),
                None => {
                    if !set_source(&mut a, Source::File(PathBuf::from(w))) {
                        return short_usage();
                    }
                }
            },
        }
        i += 1;
    }
    if a.source.is_none() {
        a.source = Some(Source::File(PathBuf::from("-")));
    }
    run(&a, &linerate_elements::registry())
}
