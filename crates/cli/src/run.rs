//! Running a router from the command line: control servers, signals,
//! progress bar, `-h` handler output and the end-of-run summary.

use crate::load::{build, Source};
use linerate_runtime::{Registry, Router, RouterOptions, RunReport};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything `linerate run` and the Click driver need to run a configuration.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    /// The configuration.
    pub source: Option<Source>,
    /// `X=value` variables.
    pub vars: Vec<(String, String)>,
    /// Handlers to read and print after the run.
    pub handlers: Vec<String>,
    /// Handler whose value is the exit status (Click's `-x`).
    pub exit_handler: Option<String>,
    /// Set up but do not run.
    pub quit: bool,
    /// Threads.
    pub threads: usize,
    /// Replicated mode.
    pub replicate: bool,
    /// Simulated time.
    pub simtime: bool,
    /// Control socket path.
    pub ctl: Vec<PathBuf>,
    /// Control TCP ports (127.0.0.1).
    pub ports: Vec<u16>,
    /// HTTP address.
    pub http: Option<SocketAddr>,
    /// Write the flat configuration here.
    pub output: Option<String>,
    /// Print the summary (not in Click mode).
    pub summary: bool,
    /// Print Click's `-t` timing line.
    pub time: bool,
    /// Print warnings.
    pub warnings: bool,
    /// Extra CLICKPATH directories.
    pub clickpath: Vec<PathBuf>,
    /// Default burst of sources and pulling tasks (`None`: the runtime's).
    pub burst: Option<usize>,
    /// Run complete SCION step graphs as one `SCIONRouter`.
    pub fuse: bool,
}

/// Run a configuration; returns the process exit status.
pub fn run(args: &RunArgs, reg: &Registry) -> i32 {
    let Some(src) = &args.source else {
        eprintln!("linerate: no configuration given (a file, or -e 'config')");
        return 1;
    };
    let opts = RouterOptions {
        threads: args.threads.max(1),
        replicate: args.replicate,
        simtime: args.simtime.then_some(0),
        default_burst: args.burst.unwrap_or(linerate_runtime::DEFAULT_BURST),
        ..RouterOptions::default()
    };
    let (config, mut router, notes) =
        match build(src, &args.vars, reg, opts, &args.clickpath, args.fuse) {
            Ok(x) => x,
            Err(d) => {
                eprint!("{d}");
                return 1;
            }
        };
    if args.warnings {
        for w in &config.warnings {
            eprint!("{w}");
        }
    }
    if args.summary {
        for n in &notes {
            eprintln!("{}: note: {n}", src.name());
        }
    }
    let mut status = 0;
    if let Some(out) = &args.output {
        let text = config.to_click();
        let r = if out == "-" {
            std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes())
        } else {
            std::fs::write(out, text)
        };
        if let Err(e) = r {
            eprintln!("{out}: {e}");
            status = 1;
        }
    }
    let globals = Arc::new(linerate_ctl::Globals {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: config.to_click(),
        flatconfig: config.to_click(),
        classes: reg.classes().map(|c| c.name.to_string()).collect(),
    });
    let mut guards_unix = Vec::new();
    let mut guards_tcp = Vec::new();
    let mut guard_http = None;
    for p in &args.ctl {
        match linerate_ctl::serve_unix(p, router.handle(), globals.clone()) {
            Ok(g) => guards_unix.push(g),
            Err(e) => {
                eprintln!("linerate: control socket {}: {e}", p.display());
                return 1;
            }
        }
    }
    for port in &args.ports {
        match linerate_ctl::serve_tcp(
            SocketAddr::from(([127, 0, 0, 1], *port)),
            router.handle(),
            globals.clone(),
        ) {
            Ok(g) => guards_tcp.push(g),
            Err(e) => {
                eprintln!("linerate: control port {port}: {e}");
                return 1;
            }
        }
    }
    if let Some(addr) = args.http {
        match linerate_ctl::serve_http(addr, router.handle(), globals.clone()) {
            Ok(g) => guard_http = Some(g),
            Err(e) => {
                eprintln!("linerate: http {addr}: {e}");
                return 1;
            }
        }
    }
    let report = if args.quit || config.elements.is_empty() {
        if !args.quit && args.warnings {
            eprintln!(
                "{}: warning: configuration has no elements, exiting",
                src.name()
            );
        }
        None
    } else {
        let rusage_before = cpu_times();
        let (done, done_rx) = std::sync::mpsc::channel::<()>();
        let sig = install_signals(&router);
        let progress = (args.summary && std::io::stderr().is_terminal())
            .then(|| spawn_progress(&router, done_rx));
        let rep = router.run();
        drop(done);
        if let Some(p) = progress {
            let _ = p.join();
        }
        drop(sig);
        if args.time {
            let (u, s) = cpu_times();
            let el = rep.elapsed;
            crate::write_stdout(&format!(
                "{:.3}u {:.3}s {}:{:02}.{:02}\n",
                u - rusage_before.0,
                s - rusage_before.1,
                el.as_secs() / 60,
                el.as_secs() % 60,
                el.subsec_millis() / 10
            ));
        }
        Some(rep)
    };
    drop(guard_http);
    drop(guards_tcp);
    drop(guards_unix);
    if let Some(rep) = &report {
        if args.summary {
            eprint!("{}", summary(&router, rep));
        }
    }
    if !args.handlers.is_empty() && print_handlers(&router, &globals, &args.handlers) {
        status = 1;
    }
    if let Some(x) = &args.exit_handler {
        match router.handle().call(x, None) {
            Ok(v) => {
                let v = v.trim();
                status = match (v.parse::<i32>(), v) {
                    (Ok(n), _) => n,
                    (_, "true") => 0,
                    (_, "false") => 1,
                    _ => {
                        eprintln!("exit handler value should be integer");
                        -1
                    }
                }
            }
            Err(e) => {
                eprintln!("{e}");
                status = -1;
            }
        }
    }
    status
}

/// Print `-h` handlers the way Click does (global handlers by bare name or
/// `.name`); returns true on any error.
fn print_handlers(
    router: &Router,
    globals: &Arc<linerate_ctl::Globals>,
    handlers: &[String],
) -> bool {
    let h = router.handle();
    let print_names = handlers.len() > 1;
    let mut err = false;
    let mut text = String::new();
    for name in handlers {
        let value = match name.split_once('.') {
            Some((el, _)) if !el.is_empty() => h.call(name, None),
            Some((_, g)) => linerate_ctl::read_global(&h, globals.clone(), g)
                .ok_or_else(|| format!("no '{name}' handler")),
            None => linerate_ctl::read_global(&h, globals.clone(), name)
                .ok_or_else(|| format!("no '{name}' handler")),
        };
        match value {
            Ok(v) => {
                if print_names {
                    text.push_str(&format!("{name}:\n"));
                }
                text.push_str(&v);
                if print_names {
                    text.push('\n');
                }
            }
            Err(e) => {
                eprintln!("{e}");
                err = true;
            }
        }
    }
    !crate::write_stdout(&text) || err
}

struct SignalGuard {
    handle: Option<signal_hook::iterator::Handle>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        // Closing the signal iterator wakes its thread at once.
        if let Some(h) = self.handle.take() {
            h.close();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// SIGINT and SIGTERM stop the router cleanly, so files are flushed and
/// the summary is printed (Click's behaviour).
fn install_signals(router: &Router) -> SignalGuard {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ]) else {
        return SignalGuard {
            handle: None,
            thread: None,
        };
    };
    let handle = signals.handle();
    let h = router.handle();
    let thread = std::thread::spawn(move || {
        for _ in signals.forever() {
            h.stop();
        }
    });
    SignalGuard {
        handle: Some(handle),
        thread: Some(thread),
    }
}

/// A progress bar over the file sources' read positions.
fn spawn_progress(
    router: &Router,
    done: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<()> {
    let h = router.handle();
    let files: Vec<usize> = router
        .elements()
        .iter()
        .enumerate()
        .filter(|(_, e)| e.class == "FromDump")
        .map(|(i, _)| i)
        .collect();
    std::thread::spawn(move || {
        if files.is_empty() {
            return;
        }
        let num = |e: usize, hn: &str| {
            h.call_elem(e, hn, None)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        // Short runs finish before a bar would be useful: wait 300 ms first.
        // Every wait ends at once when the run ends (the sender is dropped).
        let running = |d: Duration| {
            matches!(
                done.recv_timeout(d),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            )
        };
        if !running(Duration::from_millis(300)) {
            return;
        }
        let total: u64 = files.iter().filter_map(|&e| num(e, "filesize")).sum();
        if total == 0 {
            return;
        }
        // Rate and ETA from our own samples since the bar appeared (indicatif's
        // estimator is far off over the few ticks of a short run).
        let start: u64 = files.iter().filter_map(|&e| num(e, "filepos")).sum();
        let t0 = std::time::Instant::now();
        let bar = indicatif::ProgressBar::new(total).with_position(start);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        loop {
            let pos: u64 = files.iter().filter_map(|&e| num(e, "filepos")).sum();
            bar.set_position(pos);
            let secs = t0.elapsed().as_secs_f64();
            if secs > 0.05 && pos > start {
                let rate = (pos - start) as f64 / secs;
                let eta = total.saturating_sub(pos) as f64 / rate;
                bar.set_message(format!("{:.0} MB/s, eta {:.0} s", rate / 1e6, eta.ceil()));
            }
            if !running(Duration::from_millis(100)) {
                break;
            }
        }
        bar.finish_and_clear();
    })
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.2} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

/// The end-of-run summary: per source and sink, packets, bytes and rates;
/// bad packets sent to error outputs, and drops, by element and reason;
/// elapsed time.
pub fn summary(router: &Router, rep: &RunReport) -> String {
    let secs = rep.elapsed.as_secs_f64().max(1e-9);
    let mut io: Vec<(usize, bool, u64, u64)> = Vec::new();
    let mut drops: Vec<(usize, String, u64)> = Vec::new();
    let mut stats: Vec<(usize, &'static str, u64)> = Vec::new();
    let mut diverted: Vec<(usize, usize, &'static str, u64)> = Vec::new();
    router.for_each_element(|i, _, e| {
        for (key, n) in e.summary_counts() {
            match stats.iter_mut().find(|x| x.0 == i && x.1 == key) {
                Some(x) => x.2 += n,
                None => stats.push((i, key, n)),
            }
        }
        if let Some(c) = e.io_counts() {
            match io.iter_mut().find(|x| x.0 == i) {
                Some(x) => {
                    x.2 += c.packets;
                    x.3 += c.bytes;
                }
                None => io.push((i, c.source, c.packets, c.bytes)),
            }
        }
        for (reason, n) in e.drops() {
            if n > 0 {
                match drops.iter_mut().find(|x| x.0 == i && x.1 == reason) {
                    Some(x) => x.2 += n,
                    None => drops.push((i, reason.to_string(), n)),
                }
            }
        }
        for (port, reason, n) in e.diverted() {
            if n > 0 {
                match diverted
                    .iter_mut()
                    .find(|x| (x.0, x.1, x.2) == (i, port, reason))
                {
                    Some(x) => x.3 += n,
                    None => diverted.push((i, port, reason, n)),
                }
            }
        }
    });
    for (i, c) in rep.counters.iter().enumerate() {
        if c.unconnected_drops > 0 {
            drops.push((
                i,
                "pushed to an unconnected output".into(),
                c.unconnected_drops,
            ));
        }
        if c.ring_drops > 0 {
            drops.push((i, "cross-thread ring full".into(), c.ring_drops));
        }
    }
    let el = router.elements();
    let mut s = format!("linerate: ran {:.3} s\n", secs);
    let width = io
        .iter()
        .map(|x| el[x.0].name.len() + el[x.0].class.len() + 3)
        .max()
        .unwrap_or(0);
    for (i, src, p, b) in &io {
        let label = format!("{} ({})", el[*i].name, el[*i].class);
        s.push_str(&format!(
            "  {:6} {:width$}  {:>12} packets  {:>10}  {:8.2} Mpps  {:7.2} Gbps\n",
            if *src { "source" } else { "sink" },
            label,
            p,
            human_bytes(*b),
            *p as f64 / secs / 1e6,
            *b as f64 * 8.0 / secs / 1e9,
        ));
    }
    let mut seen: Vec<usize> = stats.iter().map(|x| x.0).collect();
    seen.dedup();
    for i in seen {
        let mine: Vec<_> = stats.iter().filter(|x| x.0 == i).collect();
        let text: Vec<String> = mine.iter().map(|x| format!("{} {}", x.2, x.1)).collect();
        let get = |k: &str| mine.iter().find(|x| x.1 == k).map(|x| x.2);
        let ratio = match (get("packets"), get("microflows")) {
            (Some(p), Some(m)) if m > 0 => {
                format!(" ({:.2} packets per microflow)", p as f64 / m as f64)
            }
            _ => String::new(),
        };
        s.push_str(&format!(
            "  stats  {} ({}): {}{}\n",
            el[i].name,
            el[i].class,
            text.join(", "),
            ratio
        ));
    }
    for (i, port, reason, n) in diverted {
        s.push_str(&format!(
            "  errors {} ({}) to output {}: {} {}\n",
            el[i].name, el[i].class, port, n, reason
        ));
    }
    if drops.is_empty() {
        s.push_str("  drops: none\n");
    } else {
        for (i, reason, n) in drops {
            s.push_str(&format!(
                "  drops  {} ({}): {} {}\n",
                el[i].name, el[i].class, n, reason
            ));
        }
    }
    s
}
