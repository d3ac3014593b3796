//! Building a router from a flattened configuration and running it.
//!
//! Building checks what Click checks: known classes, port counts against each
//! class's specification, push/pull agreement on every connection (agnostic
//! ports resolved as in Click), push outputs and pull inputs connected at most
//! once, and no unused ports. All problems are reported together, each with
//! the file, line and column of the element or connection at fault.
//!
//! Running places tasks on threads (`--threads N`, `StaticThreadSched`) or
//! replicates the whole graph once per thread, and drives every thread's
//! tasks, rings and timers until a stop is requested.

use crate::element::{hflags, ConfigureCtx, Element, HandlerSpec};
use crate::ports::{PortCount, Processing, ProcessingCode};
use crate::registry::Registry;
use crate::ring::Ring;
use crate::sched::{
    serve_requests, thread_loop, with_element, Edge, ElemCounters, Graph, HandlerFn, Request,
    Shared, State,
};
use crate::time::{system_now_ns, Clock};
use linerate_lang::{Config, Diagnostic, Diagnostics, Location, Severity};
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How to run a router.
#[derive(Debug, Clone)]
pub struct RouterOptions {
    /// Number of threads.
    pub threads: usize,
    /// Replicate the whole graph once per thread; sources spread packets by
    /// flow hash (RSS) so per-flow state stays on one thread.
    pub replicate: bool,
    /// Run on simulated time starting at this instant (ns since the epoch).
    pub simtime: Option<u64>,
    /// Capacity of each cross-thread ring, in packets.
    pub ring_capacity: usize,
    /// Default `BURST` of sources and pulling tasks (packets per task run).
    /// [`DEFAULT_BURST`](crate::DEFAULT_BURST) normally; the `click` driver
    /// uses 1, Click's default, so that packets interleave through a
    /// configuration exactly as in Click (e.g. two Prints in a chain).
    pub default_burst: usize,
}

impl Default for RouterOptions {
    fn default() -> Self {
        RouterOptions {
            threads: 1,
            replicate: false,
            simtime: None,
            ring_capacity: 4096,
            default_burst: crate::DEFAULT_BURST,
        }
    }
}

/// Static information about one element.
#[derive(Debug, Clone)]
pub struct ElementInfo {
    /// Name.
    pub name: String,
    /// Class name.
    pub class: String,
    /// Configuration string.
    pub config: String,
    /// Where it was declared.
    pub loc: Location,
    /// Resolved processing of each input.
    pub inputs: Vec<Processing>,
    /// Resolved processing of each output.
    pub outputs: Vec<Processing>,
    /// Connections into each input: (element, output port).
    pub in_conns: Vec<Vec<(usize, usize)>>,
    /// Connections out of each output: (element, input port).
    pub out_conns: Vec<Vec<(usize, usize)>>,
    /// Thread the element runs on (threads mode).
    pub thread: usize,
    /// The element's handlers, generic ones first (fixed at build time).
    pub handlers: Vec<HandlerSpec>,
}

struct Unit {
    graph: Graph,
    state: State,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Wall-clock duration of the run, the elements' end-of-run flush
    /// included.
    pub elapsed: Duration,
    /// Per-element runtime counters (summed over replicas).
    pub counters: Vec<ElemCounters>,
}

/// A built router, ready to run.
pub struct Router {
    info: Arc<Vec<ElementInfo>>,
    units: Arc<Mutex<Vec<Unit>>>,
    shared: Arc<Shared>,
    opts: RouterOptions,
    config_text: String,
}

fn diag(loc: &Location, message: String, help: Option<String>) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        loc: loc.clone(),
        message,
        snippet: None,
        span_len: 0,
        help,
    }
}

fn plural(n: usize, w: &str) -> String {
    if n == 1 {
        format!("{n} {w}")
    } else {
        format!("{n} {w}s")
    }
}

fn takes(r: crate::ports::Range, w: &str) -> String {
    let s = if r.max == 1 && r.min <= 1 { "" } else { "s" };
    if r.max == 0 {
        format!("no {w}s")
    } else {
        format!("{r} {w}{s}")
    }
}

/// Resolve agnostic ports. Ports are numbered: inputs of all elements, then
/// outputs. Returns the resolved processing and conflict diagnostics.
fn resolve_processing(
    config: &Config,
    codes: &[ProcessingCode],
    nin: &[usize],
    nout: &[usize],
    errors: &mut Vec<Diagnostic>,
) -> (Vec<Vec<Processing>>, Vec<Vec<Processing>>) {
    let mut ins: Vec<Vec<Processing>> = (0..nin.len())
        .map(|e| (0..nin[e]).map(|p| codes[e].input(p)).collect())
        .collect();
    let mut outs: Vec<Vec<Processing>> = (0..nout.len())
        .map(|e| (0..nout[e]).map(|p| codes[e].output(p)).collect())
        .collect();
    let declared_in = ins.clone();
    let declared_out = outs.clone();
    let mut reported = vec![false; config.connections.len()];
    let mut reported_elem = vec![false; nin.len()];
    loop {
        let mut changed = false;
        for (ci, c) in config.connections.iter().enumerate() {
            let (o, i) = (outs[c.from][c.from_port], ins[c.to][c.to_port]);
            match (o, i) {
                (Processing::Agnostic, Processing::Agnostic) => {}
                (Processing::Agnostic, v) => {
                    outs[c.from][c.from_port] = v;
                    changed = true;
                }
                (v, Processing::Agnostic) => {
                    ins[c.to][c.to_port] = v;
                    changed = true;
                }
                (a, b) if a != b && !reported[ci] => {
                    reported[ci] = true;
                    let (f, t) = (&config.elements[c.from], &config.elements[c.to]);
                    errors.push(diag(
                        &c.loc,
                        format!(
                            "'{}' {} output {} connected to '{}' {} input {}",
                            f.name,
                            a.name(),
                            c.from_port,
                            t.name,
                            b.name(),
                            c.to_port
                        ),
                        Some("push outputs must connect to push or agnostic inputs, pull inputs to pull or agnostic outputs; a Queue converts push to pull, Unqueue pull to push".into()),
                    ));
                }
                _ => {}
            }
        }
        // Within an element, all agnostic ports resolve together (Click's
        // default flow code).
        for e in 0..ins.len() {
            let mut val = None;
            let mut conflict = false;
            for (p, v) in ins[e].iter().enumerate() {
                if declared_in[e][p] == Processing::Agnostic && *v != Processing::Agnostic {
                    conflict |= val.is_some_and(|x| x != *v);
                    val = Some(*v);
                }
            }
            for (p, v) in outs[e].iter().enumerate() {
                if declared_out[e][p] == Processing::Agnostic && *v != Processing::Agnostic {
                    conflict |= val.is_some_and(|x| x != *v);
                    val = Some(*v);
                }
            }
            if conflict {
                if std::mem::replace(&mut reported_elem[e], true) {
                    continue;
                }
                let el = &config.elements[e];
                errors.push(diag(
                    &el.loc,
                    format!(
                        "agnostic element '{}' :: {} is used as both push and pull",
                        el.name, el.class
                    ),
                    None,
                ));
                continue;
            }
            if let Some(v) = val {
                for (p, x) in ins[e].iter_mut().enumerate() {
                    if declared_in[e][p] == Processing::Agnostic && *x == Processing::Agnostic {
                        *x = v;
                        changed = true;
                    }
                }
                for (p, x) in outs[e].iter_mut().enumerate() {
                    if declared_out[e][p] == Processing::Agnostic && *x == Processing::Agnostic {
                        *x = v;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            // Anything still agnostic defaults to push, as in Click.
            let mut any = false;
            for v in ins.iter_mut().flatten().chain(outs.iter_mut().flatten()) {
                if *v == Processing::Agnostic {
                    *v = Processing::Push;
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
    }
    (ins, outs)
}

/// Handler names every element has.
pub const GENERIC_HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("class"),
    HandlerSpec::read("name"),
    HandlerSpec::read("config"),
    HandlerSpec::read("ports"),
    HandlerSpec::read("handlers"),
];

fn ports_text(info: &[ElementInfo], e: usize) -> String {
    let el = &info[e];
    let mut s = String::new();
    let side = |s: &mut String,
                procs: &[Processing],
                conns: &[Vec<(usize, usize)>],
                word: &str,
                input: bool| {
        s.push_str(&format!("{}\n", plural(procs.len(), word)));
        for (p, v) in procs.iter().enumerate() {
            s.push_str(v.name());
            let list: Vec<String> = conns[p]
                .iter()
                .map(|&(x, xp)| {
                    if input {
                        format!("{} [{}]", info[x].name, xp)
                    } else {
                        format!("[{}] {}", xp, info[x].name)
                    }
                })
                .collect();
            s.push('\t');
            s.push_str(if list.is_empty() { "-" } else { "" });
            s.push_str(&list.join(", "));
            s.push('\n');
        }
    };
    side(&mut s, &el.inputs, &el.in_conns, "input", true);
    side(&mut s, &el.outputs, &el.out_conns, "output", false);
    s
}

/// Call a handler. Read values end in a newline unless empty, as Click's
/// non-raw handlers do (`click -h` and the ControlSocket show them so).
fn call_handler(
    info: &[ElementInfo],
    e: usize,
    el: &mut dyn Element,
    h: &str,
    value: Option<&str>,
) -> Result<String, String> {
    let mut r = call_handler_raw(info, e, el, h, value);
    if let Ok(s) = &mut r {
        if value.is_none() && !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
    }
    r
}

fn call_handler_raw(
    info: &[ElementInfo],
    e: usize,
    el: &mut dyn Element,
    h: &str,
    value: Option<&str>,
) -> Result<String, String> {
    let i = &info[e];
    match value {
        None => match h {
            "class" => Ok(i.class.clone()),
            "name" => Ok(i.name.clone()),
            "config" => Ok(i.config.clone()),
            "ports" => Ok(ports_text(info, e)),
            "handlers" => {
                let mut s = String::new();
                for hs in &i.handlers {
                    let f = match (hs.flags & hflags::READ != 0, hs.flags & hflags::WRITE != 0) {
                        (true, true) => "rw",
                        (true, false) => "r",
                        _ => "w",
                    };
                    s.push_str(&format!("{}\t{}\n", hs.name, f));
                }
                Ok(s)
            }
            _ => el
                .read_handler(h)
                .ok_or_else(|| no_handler(i, h, hflags::READ)),
        },
        Some(v) => match el.write_handler(h, v) {
            Some(r) => r.map(|()| String::new()),
            None => Err(no_handler(i, h, hflags::WRITE)),
        },
    }
}

fn no_handler(i: &ElementInfo, h: &str, want: u8) -> String {
    let exists = i.handlers.iter().any(|x| x.name == h);
    if exists {
        let what = if want == hflags::READ {
            "read"
        } else {
            "write"
        };
        format!("handler '{}.{}' is not {}able", i.name, h, what)
    } else {
        format!("no handler '{}.{}'", i.name, h)
    }
}

impl Router {
    /// Build a router from a flattened configuration.
    pub fn build(
        config: &Config,
        registry: &Registry,
        opts: RouterOptions,
    ) -> Result<Router, Diagnostics> {
        let n = config.elements.len();
        let mut errors = Vec::new();
        let mut classes = Vec::with_capacity(n);
        for el in &config.elements {
            match registry.get(&el.class) {
                Some(c) => classes.push(Some(*c)),
                None => {
                    errors.push(diag(
                        &el.loc,
                        format!("unknown element class '{}'", el.class),
                        None,
                    ));
                    classes.push(None);
                }
            }
        }
        if !errors.is_empty() {
            return Err(Diagnostics(errors));
        }
        let classes: Vec<_> = classes.into_iter().flatten().collect();
        let mut nin = vec![0usize; n];
        let mut nout = vec![0usize; n];
        for c in &config.connections {
            nout[c.from] = nout[c.from].max(c.from_port + 1);
            nin[c.to] = nin[c.to].max(c.to_port + 1);
        }
        // Port counts.
        for (e, el) in config.elements.iter().enumerate() {
            let cls = &classes[e];
            let Some(pc) = PortCount::parse(cls.port_count) else {
                errors.push(diag(
                    &el.loc,
                    format!(
                        "class {} has a bad port count '{}'",
                        cls.name, cls.port_count
                    ),
                    None,
                ));
                continue;
            };
            if nin[e] > pc.inputs.max {
                let at = config
                    .connections
                    .iter()
                    .find(|c| c.to == e && c.to_port >= pc.inputs.max)
                    .map(|c| &c.loc)
                    .unwrap_or(&el.loc);
                errors.push(diag(
                    at,
                    format!(
                        "'{}' :: {} has {}, but {} takes {}",
                        el.name,
                        el.class,
                        plural(nin[e], "input"),
                        el.class,
                        takes(pc.inputs, "input")
                    ),
                    None,
                ));
            }
            nin[e] = nin[e].max(pc.inputs.min);
            let orange = pc.outputs_for(nin[e]);
            if nout[e] > orange.max {
                let at = config
                    .connections
                    .iter()
                    .find(|c| c.from == e && c.from_port >= orange.max)
                    .map(|c| &c.loc)
                    .unwrap_or(&el.loc);
                errors.push(diag(
                    at,
                    format!(
                        "'{}' :: {} has {}, but {} takes {}",
                        el.name,
                        el.class,
                        plural(nout[e], "output"),
                        el.class,
                        takes(orange, "output")
                    ),
                    None,
                ));
            }
            nout[e] = nout[e].max(orange.min);
        }
        let mut in_conns: Vec<Vec<Vec<(usize, usize)>>> =
            (0..n).map(|e| vec![Vec::new(); nin[e]]).collect();
        let mut out_conns: Vec<Vec<Vec<(usize, usize)>>> =
            (0..n).map(|e| vec![Vec::new(); nout[e]]).collect();
        for c in &config.connections {
            if c.to_port < nin[c.to] && c.from_port < nout[c.from] {
                in_conns[c.to][c.to_port].push((c.from, c.from_port));
                out_conns[c.from][c.from_port].push((c.to, c.to_port));
            }
        }
        for (e, el) in config.elements.iter().enumerate() {
            for (p, cs) in in_conns[e].iter().enumerate() {
                if cs.is_empty() {
                    errors.push(diag(
                        &el.loc,
                        format!("'{}' input {} unused", el.name, p),
                        Some(format!("connect something to [{}]{}", p, el.name)),
                    ));
                }
            }
            for (p, cs) in out_conns[e].iter().enumerate() {
                if cs.is_empty() {
                    errors.push(diag(
                        &el.loc,
                        format!("'{}' output {} unused", el.name, p),
                        Some(format!(
                            "connect {}[{}] to something, e.g. Discard",
                            el.name, p
                        )),
                    ));
                }
            }
        }
        let mut codes = Vec::with_capacity(n);
        for (e, el) in config.elements.iter().enumerate() {
            match ProcessingCode::parse(classes[e].processing) {
                Some(c) => codes.push(c),
                None => {
                    errors.push(diag(
                        &el.loc,
                        format!("class {} has a bad processing code", el.class),
                        None,
                    ));
                    codes.push(ProcessingCode::parse("a/a").expect("valid code"));
                }
            }
        }
        let (ins, outs) = resolve_processing(config, &codes, &nin, &nout, &mut errors);
        for (e, el) in config.elements.iter().enumerate() {
            for (p, cs) in out_conns[e].iter().enumerate() {
                if outs[e][p] == Processing::Push && cs.len() > 1 {
                    errors.push(diag(
                        &el.loc,
                        format!(
                            "'{}' push output {} connected to {} inputs",
                            el.name,
                            p,
                            cs.len()
                        ),
                        Some(
                            "a push output can feed only one input; use Tee to copy packets".into(),
                        ),
                    ));
                }
            }
            for (p, cs) in in_conns[e].iter().enumerate() {
                if ins[e][p] == Processing::Pull && cs.len() > 1 {
                    errors.push(diag(
                        &el.loc,
                        format!(
                            "'{}' pull input {} connected to {} outputs",
                            el.name,
                            p,
                            cs.len()
                        ),
                        Some("a pull input can pull from only one output".into()),
                    ));
                }
            }
        }
        if !errors.is_empty() {
            return Err(Diagnostics(errors));
        }
        let info: Vec<ElementInfo> = (0..n)
            .map(|e| ElementInfo {
                name: config.elements[e].name.clone(),
                class: config.elements[e].class.clone(),
                config: config.elements[e].config.clone(),
                loc: config.elements[e].loc.clone(),
                inputs: ins[e].clone(),
                outputs: outs[e].clone(),
                in_conns: in_conns[e].clone(),
                out_conns: out_conns[e].clone(),
                thread: 0,
                handlers: GENERIC_HANDLERS.to_vec(),
            })
            .collect();
        let nthreads = opts.threads.max(1);
        let nrep = if opts.replicate { nthreads } else { 1 };
        let mut replicas: Vec<Vec<Box<dyn Element>>> = Vec::with_capacity(nrep);
        for r in 0..nrep {
            let mut elems = Vec::with_capacity(n);
            for (e, el) in info.iter().enumerate() {
                let ctx = ConfigureCtx {
                    name: &el.name,
                    config: &el.config,
                    args: linerate_args::split_args(&el.config),
                    inputs: &el.inputs,
                    outputs: &el.outputs,
                    replica: (r, nrep),
                    default_burst: opts.default_burst.clamp(1, crate::MAX_BATCH),
                };
                match (classes[e].make)(&ctx) {
                    Ok(x) => elems.push(Some(x)),
                    Err(msgs) => {
                        for m in msgs {
                            errors.push(diag(
                                &el.loc,
                                format!("{} :: {}: {}", el.name, el.class, m),
                                None,
                            ));
                        }
                        elems.push(None);
                    }
                }
            }
            if !errors.is_empty() {
                return Err(Diagnostics(errors));
            }
            let mut elems: Vec<Box<dyn Element>> = elems.into_iter().flatten().collect();
            for (e, x) in elems.iter_mut().enumerate() {
                let mut ictx = crate::sched::InitCtx {
                    name: &info[e].name,
                    simtime: opts.simtime.is_some(),
                    replica: (r, nrep),
                };
                if let Err(m) = x.initialize(&mut ictx) {
                    errors.push(diag(
                        &info[e].loc,
                        format!("{} :: {}: {}", info[e].name, info[e].class, m),
                        None,
                    ));
                }
            }
            if !errors.is_empty() {
                return Err(Diagnostics(errors));
            }
            replicas.push(elems);
        }
        let mut info = info;
        let stop_managed = replicas[0].iter().any(|x| x.manages_driver_stop());
        for (e, x) in replicas[0].iter().enumerate() {
            info[e].handlers.extend_from_slice(x.handlers());
        }
        let cap = opts.ring_capacity;
        let units = if opts.replicate {
            let shared = Arc::new(Shared::new(nthreads, true));
            let hinfo = Arc::new(info.clone());
            let hf: HandlerFn = Arc::new(move |e, el, h, v| call_handler(&hinfo, e, el, h, v));
            let units = replicas
                .into_iter()
                .enumerate()
                .map(|(r, elems)| {
                    let tasks = (0..n)
                        .filter(|&e| elems[e].is_task())
                        .map(|e| e as u32)
                        .collect();
                    let g = make_graph(
                        &info,
                        elems.into_iter().map(Some).collect(),
                        tasks,
                        &vec![0; n],
                        0,
                        cap,
                        &mut Vec::new(),
                    );
                    let s = State::new(n, clock(&opts), shared.clone(), r, (r, nrep), hf.clone());
                    Unit { graph: g, state: s }
                })
                .collect();
            (units, shared)
        } else {
            let elems = replicas.pop().expect("one replica");
            let thread_of = place(&info, &elems, nthreads, &mut errors);
            if !errors.is_empty() {
                return Err(Diagnostics(errors));
            }
            for (e, t) in thread_of.iter().enumerate() {
                info[e].thread = *t;
            }
            let shared = Arc::new(Shared::new(nthreads, false));
            let hinfo = Arc::new(info.clone());
            let hf: HandlerFn = Arc::new(move |e, el, h, v| call_handler(&hinfo, e, el, h, v));
            let mut owned: Vec<Option<Box<dyn Element>>> = elems.into_iter().map(Some).collect();
            let mut rings = Vec::new();
            let mut units = Vec::with_capacity(nthreads);
            for t in 0..nthreads {
                let mine: Vec<Option<Box<dyn Element>>> = (0..n)
                    .map(|e| {
                        if thread_of[e] == t {
                            owned[e].take()
                        } else {
                            None
                        }
                    })
                    .collect();
                let tasks = (0..n)
                    .filter(|&e| thread_of[e] == t && mine[e].as_ref().is_some_and(|x| x.is_task()))
                    .map(|e| e as u32)
                    .collect();
                let g = make_graph(&info, mine, tasks, &thread_of, t, cap, &mut rings);
                let s = State::new(n, clock(&opts), shared.clone(), t, (0, 1), hf.clone());
                units.push(Unit { graph: g, state: s });
            }
            // Connect each ring's consumer side to its thread.
            for (ring, to_thread, e, p) in rings {
                units[to_thread].graph.in_rings.push((ring, e, p));
            }
            (units, shared)
        };
        let (units, shared) = units;
        shared.stop_managed.store(stop_managed, Ordering::Release);
        let info = Arc::new(info);
        Ok(Router {
            info,
            units: Arc::new(Mutex::new(units)),
            shared,
            opts,
            config_text: config.to_click(),
        })
    }

    /// Static information about every element.
    pub fn elements(&self) -> &[ElementInfo] {
        &self.info
    }

    /// Index of the element called `name`.
    pub fn element_index(&self, name: &str) -> Option<usize> {
        self.info.iter().position(|e| e.name == name)
    }

    /// The flattened configuration text.
    pub fn flat_config(&self) -> &str {
        &self.config_text
    }

    /// A handle for calling handlers from other threads while the router runs.
    pub fn handle(&self) -> RouterHandle {
        RouterHandle {
            info: self.info.clone(),
            units: self.units.clone(),
            shared: self.shared.clone(),
        }
    }

    /// Run until a stop is requested; returns what happened.
    pub fn run(&mut self) -> RunReport {
        let mut units = std::mem::take(&mut *self.units.lock().unwrap_or_else(|e| e.into_inner()));
        self.shared.running.store(true, Ordering::Release);
        let start = Instant::now();
        if units.len() == 1 {
            let u = &mut units[0];
            thread_loop(&u.graph, &mut u.state);
        } else {
            // Replicas share no rings: each flushes on its own thread.
            let replicated = self.shared.replicated;
            let order = topo_order(&self.info);
            let order = &order;
            units = std::thread::scope(|sc| {
                let hs: Vec<_> = units
                    .into_iter()
                    .map(|mut u| {
                        sc.spawn(move || {
                            thread_loop(&u.graph, &mut u.state);
                            if replicated {
                                flush_all(order, std::slice::from_mut(&mut u));
                            }
                            u
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().expect("router thread panicked"))
                    .collect()
            });
        }
        if units.len() == 1 || !self.shared.replicated {
            flush_all(&topo_order(&self.info), &mut units);
        }
        // After the flush, as the replicas' threads include theirs: what
        // elements do at the end of a run (a flow table exported, say) is
        // part of the run.
        let elapsed = start.elapsed();
        for u in units.iter_mut() {
            for c in u.graph.elems.iter().flatten() {
                if let Ok(mut e) = c.try_borrow_mut() {
                    e.cleanup();
                }
            }
        }
        let mut counters = vec![ElemCounters::default(); self.info.len()];
        for u in &units {
            for (i, c) in u.state.counters.iter().enumerate() {
                counters[i].packets_in += c.packets_in;
                counters[i].unconnected_drops += c.unconnected_drops;
                counters[i].ring_drops += c.ring_drops;
            }
        }
        // Handler calls that raced with the end of the run sit in the
        // mailboxes: answer them and put the units back under the same lock
        // that `call_elem` holds while it posts, so every call is either
        // answered here or sees the units.
        let mut slot = self.units.lock().unwrap_or_else(|e| e.into_inner());
        for u in &units {
            serve_requests(
                &u.graph,
                &self.shared.mailboxes[u.state.thread],
                &u.state.handler_fn,
            );
        }
        *slot = units;
        self.shared.running.store(false, Ordering::Release);
        drop(slot);
        RunReport { elapsed, counters }
    }

    /// Visit every element instance (one per replica) outside a run.
    pub fn for_each_element(&self, mut f: impl FnMut(usize, &ElementInfo, &dyn Element)) {
        let units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        for u in units.iter() {
            for (i, c) in u.graph.elems.iter().enumerate() {
                if let Some(c) = c {
                    if let Ok(e) = c.try_borrow() {
                        f(i, &self.info[i], &**e);
                    }
                }
            }
        }
    }

    /// The options this router was built with.
    pub fn options(&self) -> &RouterOptions {
        &self.opts
    }
}

/// Elements in topological order (upstream first); elements on cycles
/// follow in index order.
fn topo_order(info: &[ElementInfo]) -> Vec<usize> {
    let n = info.len();
    let mut indeg: Vec<usize> = info
        .iter()
        .map(|e| e.in_conns.iter().map(Vec::len).sum())
        .collect();
    let mut order: Vec<usize> = (0..n).filter(|&e| indeg[e] == 0).collect();
    let mut i = 0;
    while i < order.len() {
        for &(d, _) in info[order[i]].out_conns.iter().flatten() {
            indeg[d] -= 1;
            if indeg[d] == 0 {
                order.push(d);
            }
        }
        i += 1;
    }
    let mut seen = vec![false; n];
    for &e in &order {
        seen[e] = true;
    }
    order.extend((0..n).filter(|&e| !seen[e]));
    order
}

/// The end-of-run flush (`Element::flush`) of `units`: each element in
/// topological `order`, each unit, until it has nothing left, delivering
/// cross-thread rings in between. Single-threaded after the threads have
/// joined; in replicated mode each replica flushes itself on its own thread
/// (replicas share no rings).
fn flush_all(order: &[usize], units: &mut [Unit]) {
    for &e in order {
        for k in 0..units.len() {
            if units[k].graph.elems[e].is_none() {
                continue;
            }
            loop {
                let u = &mut units[k];
                let more = crate::sched::flush_element(&u.graph, &mut u.state, e as u32);
                while units.iter_mut().fold(false, |w, u| {
                    crate::sched::settle_rings(&u.graph, &mut u.state) | w
                }) {}
                if !more {
                    break;
                }
            }
        }
    }
}

fn clock(opts: &RouterOptions) -> Clock {
    match opts.simtime {
        Some(t) => Clock::Sim(t),
        None => Clock::Real,
    }
}

fn make_graph(
    info: &[ElementInfo],
    elems: Vec<Option<Box<dyn Element>>>,
    tasks: Vec<u32>,
    thread_of: &[usize],
    me: usize,
    ring_capacity: usize,
    rings: &mut Vec<(Arc<Ring>, usize, u32, u32)>,
) -> Graph {
    let n = info.len();
    let mut out = Vec::with_capacity(n);
    let mut inp = Vec::with_capacity(n);
    for (e, el) in info.iter().enumerate() {
        let mine = thread_of[e] == me;
        out.push(
            el.out_conns
                .iter()
                .enumerate()
                .map(|(p, cs)| match (mine, el.outputs[p], cs.first()) {
                    (true, Processing::Push, Some(&(t, tp))) if thread_of[t] == me => {
                        if elems[t].as_ref().is_some_and(|x| x.calls_handlers()) {
                            Edge::Stacked(t as u32, tp as u32)
                        } else {
                            Edge::Local(t as u32, tp as u32)
                        }
                    }
                    (true, Processing::Push, Some(&(t, tp))) => {
                        let r = Arc::new(Ring::new(ring_capacity));
                        rings.push((r.clone(), thread_of[t], t as u32, tp as u32));
                        Edge::Ring(r)
                    }
                    _ => Edge::None,
                })
                .collect(),
        );
        inp.push(
            el.in_conns
                .iter()
                .enumerate()
                .map(|(p, cs)| match (el.inputs[p], cs.first()) {
                    (Processing::Pull, Some(&(u, up))) => Some((u as u32, up as u32)),
                    _ => None,
                })
                .collect(),
        );
    }
    Graph {
        elems: elems.into_iter().map(|x| x.map(RefCell::new)).collect(),
        out,
        inp,
        names: Arc::new(info.iter().map(|e| e.name.clone()).collect()),
        tasks,
        in_rings: Vec::new(),
    }
}

/// Assign every element to a thread: tasks by `StaticThreadSched` or round
/// robin; elements a task pulls from go to the task's thread; elements a task
/// pushes into go to the first task's thread that reaches them, and later
/// pushes from other threads cross through rings.
fn place(
    info: &[ElementInfo],
    elems: &[Box<dyn Element>],
    nthreads: usize,
    errors: &mut Vec<Diagnostic>,
) -> Vec<usize> {
    let n = info.len();
    let mut requested: Vec<Option<usize>> = vec![None; n];
    for (e, x) in elems.iter().enumerate() {
        for (name, t) in x.thread_requests() {
            match info.iter().position(|i| i.name == name) {
                Some(i) => requested[i] = Some(t % nthreads),
                None => errors.push(diag(
                    &info[e].loc,
                    format!("{}: no element named '{}'", info[e].name, name),
                    None,
                )),
            }
        }
    }
    let tasks: Vec<usize> = (0..n).filter(|&e| elems[e].is_task()).collect();
    let mut thread_of: Vec<Option<usize>> = vec![None; n];
    let mut rr = 0;
    for &t in &tasks {
        let th = requested[t].unwrap_or_else(|| {
            let x = rr % nthreads;
            rr += 1;
            x
        });
        thread_of[t] = Some(th);
    }
    // Pull side.
    for &t in &tasks {
        let th = thread_of[t].unwrap_or(0);
        let mut stack = vec![t];
        while let Some(e) = stack.pop() {
            for (p, cs) in info[e].in_conns.iter().enumerate() {
                if info[e].inputs[p] != Processing::Pull {
                    continue;
                }
                for &(u, _) in cs {
                    match thread_of[u] {
                        None => {
                            thread_of[u] = Some(th);
                            stack.push(u);
                        }
                        Some(x) if x != th && !tasks.contains(&u) => errors.push(diag(
                            &info[u].loc,
                            format!("'{}' is pulled from threads {} and {}", info[u].name, x, th),
                            Some(
                                "pull paths cannot cross threads; put a Queue between them".into(),
                            ),
                        )),
                        _ => {}
                    }
                }
            }
        }
    }
    // Push side.
    for &t in &tasks {
        let th = thread_of[t].unwrap_or(0);
        let mut stack = vec![t];
        while let Some(e) = stack.pop() {
            for (p, cs) in info[e].out_conns.iter().enumerate() {
                if info[e].outputs[p] != Processing::Push {
                    continue;
                }
                for &(d, _) in cs {
                    if thread_of[d].is_none() {
                        thread_of[d] = Some(th);
                        stack.push(d);
                    }
                }
            }
        }
    }
    thread_of.into_iter().map(|t| t.unwrap_or(0)).collect()
}

/// A cloneable, thread-safe handle for calling handlers while the router
/// runs (from the control socket or HTTP server) or between runs.
#[derive(Clone)]
pub struct RouterHandle {
    info: Arc<Vec<ElementInfo>>,
    units: Arc<Mutex<Vec<Unit>>>,
    shared: Arc<Shared>,
}

impl RouterHandle {
    /// Element information.
    pub fn elements(&self) -> &[ElementInfo] {
        &self.info
    }

    /// Ask the router to stop.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
    }

    /// True while the router runs.
    pub fn running(&self) -> bool {
        self.shared.running.load(Ordering::Acquire)
    }

    /// Handlers of element `e` with their flags (empty if there is no such element).
    pub fn handlers_of(&self, e: usize) -> Vec<HandlerSpec> {
        self.info
            .get(e)
            .map(|i| i.handlers.clone())
            .unwrap_or_default()
    }

    /// Read (`value == None`) or write a handler given as `element.handler`.
    pub fn call(&self, name: &str, value: Option<&str>) -> Result<String, String> {
        let (el, h) = name
            .rsplit_once('.')
            .ok_or_else(|| format!("no handler '{name}'"))?;
        let e = self
            .info
            .iter()
            .position(|i| i.name == el)
            .ok_or_else(|| format!("no element named '{el}'"))?;
        self.call_elem(e, h, value)
    }

    /// Read or write handler `h` of element index `e`. In replicated mode,
    /// reads of numbers are summed over replicas; writes go to every replica.
    pub fn call_elem(&self, e: usize, h: &str, value: Option<&str>) -> Result<String, String> {
        if e >= self.info.len() {
            return Err(format!("no element number {e}"));
        }
        let mut results = Vec::new();
        let mut rxs = Vec::new();
        {
            // Held while posting too: `run` answers the mailboxes and puts
            // the units back under this lock, so no request is left behind.
            let units = self.units.lock().unwrap_or_else(|x| x.into_inner());
            for u in units.iter() {
                if let Some(r) =
                    with_element(&u.graph, e, |el| call_handler(&self.info, e, el, h, value))
                {
                    results.push(r);
                }
            }
            if units.is_empty() {
                for (t, mb) in self.shared.mailboxes.iter().enumerate() {
                    if self.info[e].thread != t && !self.shared.replicated {
                        continue;
                    }
                    let (tx, rx) = mpsc::channel();
                    mb.queue
                        .lock()
                        .unwrap_or_else(|x| x.into_inner())
                        .push(Request {
                            elem: e,
                            handler: h.to_string(),
                            value: value.map(|s| s.to_string()),
                            reply: tx,
                        });
                    mb.pending.store(true, Ordering::Release);
                    rxs.push(rx);
                }
            }
        }
        for rx in rxs {
            match rx.recv_timeout(Duration::from_secs(5)) {
                Ok(r) => results.push(r),
                Err(_) => results.push(Err("router did not answer (stopped?)".into())),
            }
        }
        combine(results)
    }
}

fn combine(results: Vec<Result<String, String>>) -> Result<String, String> {
    if results.len() <= 1 {
        return results
            .into_iter()
            .next()
            .unwrap_or_else(|| Err("no such element".into()));
    }
    let mut ok = Vec::new();
    for r in results {
        ok.push(r?);
    }
    let nums: Option<Vec<i128>> = ok.iter().map(|s| s.trim().parse::<i128>().ok()).collect();
    match nums {
        Some(v) => Ok(format!("{}\n", v.iter().sum::<i128>())),
        None => Ok(ok.swap_remove(0)),
    }
}

/// Current system time, re-exported for elements that timestamp packets.
pub fn now_ns() -> u64 {
    system_now_ns()
}
