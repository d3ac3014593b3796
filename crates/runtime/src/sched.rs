//! Per-thread execution: the context elements see, the run-to-completion
//! work stack, tasks, timers, cross-thread rings and the handler mailbox.
//!
//! Dispatch is Click's: when an element pushes a batch to an element on the
//! same thread, that element runs at once, inside the push, so a batch
//! pushed to output 0 is completely processed before the one pushed to
//! output 1. A push is deferred to the thread's work stack instead when the
//! element it goes to is already running (a loop in the graph), when
//! `MAX_DEPTH` calls are nested, while earlier pushes wait there, or when
//! that element calls other elements' handlers (which must not be running
//! then, see [`Element::calls_handlers`]); an
//! element's deferred batches are ordered so that output 0's runs first, and
//! the stack is drained depth first, which is the same order. The direct
//! call costs about 14 ns less a hop than going through the stack every time
//! (the entry's store and reload, the reordering): a third of the C point's
//! per-batch cost (`docs/performance.md`, session 15).

use crate::batch::{Batch, MAX_BATCH};
use crate::element::Element;
use crate::ring::Ring;
use crate::time::{Clock, RecentClock};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Nested direct pushes after which pushes go through the work stack.
const MAX_DEPTH: u32 = 64;

/// Where an output port leads.
pub(crate) enum Edge {
    /// Not connected (pull outputs, or unused).
    None,
    /// An element on the same thread, called directly when it can be:
    /// (element, input port).
    Local(u32, u32),
    /// An element on the same thread that calls other elements' handlers
    /// ([`Element::calls_handlers`]), always reached through the work stack
    /// so that no element upstream of it is running when it does.
    Stacked(u32, u32),
    /// An element on another thread, through a ring.
    Ring(Arc<Ring>),
}

/// The part of the graph a thread runs.
pub(crate) struct Graph {
    pub elems: Vec<Option<RefCell<Box<dyn Element>>>>,
    pub out: Vec<Vec<Edge>>,
    pub inp: Vec<Vec<Option<(u32, u32)>>>,
    pub names: Arc<Vec<String>>,
    pub tasks: Vec<u32>,
    /// Incoming rings: (ring, element, input port).
    pub in_rings: Vec<(Arc<Ring>, u32, u32)>,
}

impl Graph {
    /// Element `e` on this thread, borrowed; `None` if it runs elsewhere or
    /// is running already.
    #[inline]
    fn idle(&self, e: u32) -> Option<std::cell::RefMut<'_, Box<dyn Element>>> {
        self.elems[e as usize].as_ref()?.try_borrow_mut().ok()
    }
}

/// A handler call sent to a running thread.
pub(crate) struct Request {
    pub elem: usize,
    pub handler: String,
    pub value: Option<String>,
    pub reply: mpsc::Sender<Result<String, String>>,
}

/// A thread's handler mailbox.
#[derive(Default)]
pub(crate) struct Mailbox {
    pub pending: AtomicBool,
    pub queue: Mutex<Vec<Request>>,
}

/// State shared by all threads of a run.
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub inflight: AtomicI64,
    pub draining: AtomicUsize,
    pub nthreads: usize,
    pub mailboxes: Vec<Mailbox>,
    pub running: AtomicBool,
    pub replicated: bool,
    /// Stop requests from elements needed before the router stops: one per
    /// replica in replicated mode (each replica's source must finish), else 1.
    pub stop_quorum: usize,
    pub stop_votes: AtomicUsize,
    /// A DriverManager (driver script) handles stop requests: elements'
    /// requests are counted in `stop_requests` instead of stopping the router.
    pub stop_managed: AtomicBool,
    /// Stop requests delivered to the driver script (see `stop_managed`).
    pub stop_requests: AtomicUsize,
}

impl Shared {
    pub fn new(nthreads: usize, replicated: bool) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            inflight: AtomicI64::new(0),
            draining: AtomicUsize::new(0),
            nthreads,
            mailboxes: (0..nthreads).map(|_| Mailbox::default()).collect(),
            running: AtomicBool::new(false),
            replicated,
            stop_quorum: if replicated { nthreads } else { 1 },
            stop_votes: AtomicUsize::new(0),
            stop_managed: AtomicBool::new(false),
            stop_requests: AtomicUsize::new(0),
        }
    }
}

/// Counters the runtime keeps for every element.
#[derive(Debug, Clone, Copy, Default)]
pub struct ElemCounters {
    /// Packets that entered the element (pushed in or pulled out of it).
    pub packets_in: u64,
    /// Packets pushed to an unconnected output and dropped.
    pub unconnected_drops: u64,
    /// Packets dropped because a cross-thread ring stayed full.
    pub ring_drops: u64,
}

/// Mutable per-thread state.
pub(crate) struct State {
    stack: Vec<(u32, u32, Batch)>,
    depth: u32,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    timer_at: Vec<u64>,
    pub clock: Clock,
    pub shared: Arc<Shared>,
    pub thread: usize,
    pub replica: (usize, usize),
    pub counters: Vec<ElemCounters>,
    pub handler_fn: HandlerFn,
    stop_voted: bool,
    /// The clock as first read in the current scheduler round (0: not yet).
    recent: std::cell::Cell<u64>,
    /// What that read reads on the real clock.
    recent_clock: RecentClock,
}

/// How a thread executes a handler request on one of its elements.
pub(crate) type HandlerFn = Arc<
    dyn Fn(usize, &mut dyn Element, &str, Option<&str>) -> Result<String, String> + Send + Sync,
>;

impl State {
    /// The clock, read at most once per scheduler round.
    #[inline]
    fn recent_ns(&self) -> u64 {
        match self.recent.get() {
            0 => {
                let t = match self.clock {
                    Clock::Real => self.recent_clock.now_ns(),
                    Clock::Sim(t) => t,
                };
                self.recent.set(t);
                t
            }
            t => t,
        }
    }

    pub fn new(
        nelems: usize,
        clock: Clock,
        shared: Arc<Shared>,
        thread: usize,
        replica: (usize, usize),
        handler_fn: HandlerFn,
    ) -> State {
        State {
            stack: Vec::with_capacity(64),
            depth: 0,
            timers: BinaryHeap::new(),
            timer_at: vec![0; nelems],
            clock,
            shared,
            thread,
            replica,
            counters: vec![ElemCounters::default(); nelems],
            handler_fn,
            stop_voted: false,
            recent: std::cell::Cell::new(0),
            recent_clock: RecentClock::new(),
        }
    }
}

/// The context an element gets while it runs: its ports, the clock, timers.
pub struct Ctx<'a> {
    g: &'a Graph,
    s: &'a mut State,
    me: u32,
}

impl<'a> Ctx<'a> {
    /// Send `batch` out of output `port`. Empty batches are ignored; batches
    /// sent to an unconnected port are dropped and counted.
    #[inline]
    pub fn push(&mut self, port: usize, mut batch: Batch) {
        if batch.is_empty() {
            return;
        }
        match self.g.out[self.me as usize].get(port) {
            Some(&Edge::Local(e, p)) => {
                if self.s.stack.is_empty() && self.s.depth < MAX_DEPTH {
                    if let Some(mut el) = self.g.idle(e) {
                        self.s.counters[e as usize].packets_in += batch.len() as u64;
                        self.s.depth += 1;
                        let mut ctx = Ctx {
                            g: self.g,
                            s: &mut *self.s,
                            me: e,
                        };
                        el.push(p as usize, batch, &mut ctx);
                        self.s.depth -= 1;
                        return;
                    }
                }
                self.s.stack.push((e, p, batch))
            }
            Some(&Edge::Stacked(e, p)) => self.s.stack.push((e, p, batch)),
            Some(Edge::Ring(r)) => push_ring(r, &mut batch, self.s, self.me),
            _ => self.s.counters[self.me as usize].unconnected_drops += batch.len() as u64,
        }
    }

    /// Pull up to `max` packets from input `port`.
    #[inline]
    pub fn pull(&mut self, port: usize, max: usize) -> Option<Batch> {
        let (u, up) = (*self.g.inp[self.me as usize].get(port)?)?;
        let mut e = self.g.idle(u)?;
        // Batches the upstream element pushes meanwhile and that wait on the
        // work stack stay in the order they were pushed: the element that
        // pulls is running, and its own activation orders them with the
        // ones it pushes itself, after them.
        let r = {
            let mut ctx = Ctx {
                g: self.g,
                s: &mut *self.s,
                me: u,
            };
            e.pull(up as usize, max, &mut ctx)
        };
        if let Some(b) = &r {
            self.s.counters[u as usize].packets_in += b.len() as u64;
        }
        r
    }

    /// Number of output ports in use.
    pub fn noutputs(&self) -> usize {
        self.g.out[self.me as usize].len()
    }

    /// Number of input ports in use.
    pub fn ninputs(&self) -> usize {
        self.g.inp[self.me as usize].len()
    }

    /// True if output `port` leads somewhere (an element on this or another thread).
    pub fn output_connected(&self, port: usize) -> bool {
        !matches!(
            self.g.out[self.me as usize].get(port),
            None | Some(Edge::None)
        )
    }

    /// Current time (system or simulated) in nanoseconds since the epoch.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.s.clock.now_ns()
    }

    /// The time at the start of the current scheduler round (Click's
    /// `Timestamp::recent()`): one clock read shared by every element that
    /// timestamps packets in the round, at most a few microseconds old.
    #[inline]
    pub fn recent_ns(&self) -> u64 {
        self.s.recent_ns()
    }

    /// True when running on simulated time.
    pub fn simtime(&self) -> bool {
        matches!(self.s.clock, Clock::Sim(_))
    }

    /// Fire this element's timer at `t_ns` (replaces an earlier setting).
    pub fn schedule_at(&mut self, t_ns: u64) {
        let t = t_ns.max(1);
        self.s.timer_at[self.me as usize] = t;
        self.s.timers.push(Reverse((t, self.me)));
    }

    /// Fire this element's timer `ns` nanoseconds from now.
    pub fn schedule_after(&mut self, ns: u64) {
        let t = self.now_ns().saturating_add(ns);
        self.schedule_at(t);
    }

    /// Cancel this element's timer.
    pub fn unschedule(&mut self) {
        self.s.timer_at[self.me as usize] = 0;
    }

    /// Ask the driver to stop (Click's `please_stop_driver`). In replicated
    /// mode the router stops once every replica has asked.
    /// When a driver script (DriverManager) manages stops, the request is
    /// counted for it instead (see [`Ctx::stop_requests`]).
    pub fn stop_router(&mut self) {
        if self.s.shared.stop_managed.load(Ordering::Relaxed) {
            self.s.shared.stop_requests.fetch_add(1, Ordering::AcqRel);
            return;
        }
        if self.s.stop_voted {
            return;
        }
        self.s.stop_voted = true;
        let sh = &self.s.shared;
        if sh.stop_votes.fetch_add(1, Ordering::AcqRel) + 1 >= sh.stop_quorum {
            sh.stop.store(true, Ordering::Release);
        }
    }

    /// Number of stop requests delivered to the driver script so far (only
    /// counted while a DriverManager manages stops).
    pub fn stop_requests(&self) -> usize {
        self.s.shared.stop_requests.load(Ordering::Acquire)
    }

    /// Stop the router now, whoever manages stop requests (the driver
    /// script's own `stop`).
    pub fn stop_driver(&mut self) {
        self.s.shared.stop.store(true, Ordering::Release);
    }

    /// True once a stop was requested.
    pub fn stopping(&self) -> bool {
        self.s.shared.stop.load(Ordering::Relaxed)
    }

    /// (replica index, replica count); `(0, 1)` unless replicated.
    pub fn replica(&self) -> (usize, usize) {
        self.s.replica
    }

    /// This element's name.
    pub fn name(&self) -> &str {
        &self.g.names[self.me as usize]
    }

    /// Index of the thread running this element.
    pub fn thread(&self) -> usize {
        self.s.thread
    }

    /// Read (`value == None`) or write another element's handler,
    /// `element.handler`, from the data plane (Click's `HandlerCall`, used by
    /// Script and DriverManager). The global write handler `stop` stops the
    /// router. The element must run on this thread; an element cannot call
    /// its own handlers this way (it has them at hand).
    pub fn call_handler(&mut self, name: &str, value: Option<&str>) -> Result<String, String> {
        if name == "stop" || name == ".stop" {
            if self.s.shared.stop_managed.load(Ordering::Relaxed) {
                self.s.shared.stop_requests.fetch_add(1, Ordering::AcqRel);
            } else {
                self.s.shared.stop.store(true, Ordering::Release);
            }
            return Ok(String::new());
        }
        // `element.handler ARGS`: a read handler with parameters gets
        // `handler ARGS` (the element is named before the first space).
        let target = name.split(char::is_whitespace).next().unwrap_or(name);
        let (el, _) = target
            .rsplit_once('.')
            .ok_or_else(|| format!("no handler '{name}'"))?;
        let h = &name[el.len() + 1..];
        let idx = self
            .g
            .names
            .iter()
            .position(|n| n == el)
            .ok_or_else(|| format!("no element named '{el}'"))?;
        if idx == self.me as usize {
            return Err(format!("'{name}': an element cannot call its own handler"));
        }
        let cell = self.g.elems[idx]
            .as_ref()
            .ok_or_else(|| format!("'{el}' runs on another thread"))?;
        let mut e = cell
            .try_borrow_mut()
            .map_err(|_| {
                format!(
                    "'{el}' is busy (it is pushing packets to this element, which then must say so with Element::calls_handlers)"
                )
            })?;
        (self.s.handler_fn)(idx, &mut **e, h, value)
    }
}

#[cold]
fn push_ring(r: &Ring, batch: &mut Batch, s: &mut State, me: u32) {
    let n = batch.len() as i64;
    s.shared.inflight.fetch_add(n, Ordering::AcqRel);
    let start = Instant::now();
    loop {
        r.push_batch(batch);
        if batch.is_empty() {
            return;
        }
        // Back-pressure: the consumer runs on another core; wait for it, but
        // never forever (a cycle of full rings would deadlock).
        if start.elapsed() > Duration::from_millis(50) {
            let left = batch.len() as u64;
            s.shared.inflight.fetch_sub(left as i64, Ordering::AcqRel);
            s.counters[me as usize].ring_drops += left;
            return;
        }
        std::thread::yield_now();
    }
}

/// Context for `Element::initialize`.
pub struct InitCtx<'a> {
    pub(crate) name: &'a str,
    pub(crate) simtime: bool,
    pub(crate) replica: (usize, usize),
}

impl InitCtx<'_> {
    /// The element's name.
    pub fn name(&self) -> &str {
        self.name
    }
    /// True when running on simulated time.
    pub fn simtime(&self) -> bool {
        self.simtime
    }
    /// (replica index, replica count).
    pub fn replica(&self) -> (usize, usize) {
        self.replica
    }
}

fn activate(g: &Graph, s: &mut State, elem: u32, f: impl FnOnce(&mut dyn Element, &mut Ctx<'_>)) {
    let Some(mut e) = g.idle(elem) else {
        return;
    };
    let mark = s.stack.len();
    {
        let mut ctx = Ctx {
            g,
            s: &mut *s,
            me: elem,
        };
        f(&mut **e, &mut ctx);
    }
    drop(e);
    s.stack[mark..].reverse();
}

#[inline]
fn drain(g: &Graph, s: &mut State) {
    while let Some((e, p, b)) = s.stack.pop() {
        s.counters[e as usize].packets_in += b.len() as u64;
        activate(g, s, e, |el, ctx| el.push(p as usize, b, ctx));
    }
}

fn run_timers(g: &Graph, s: &mut State, now: u64) -> bool {
    let mut fired = false;
    while let Some(&Reverse((t, e))) = s.timers.peek() {
        if t > now {
            break;
        }
        s.timers.pop();
        if s.timer_at[e as usize] != t {
            continue; // rescheduled or cancelled
        }
        s.timer_at[e as usize] = 0;
        activate(g, s, e, |el, ctx| el.run_timer(ctx));
        drain(g, s);
        fired = true;
    }
    fired
}

fn next_timer(s: &mut State) -> Option<u64> {
    while let Some(&Reverse((t, e))) = s.timers.peek() {
        if s.timer_at[e as usize] == t {
            return Some(t);
        }
        s.timers.pop();
    }
    None
}

/// Answer the handler requests waiting in `mb` using the elements of `g`.
pub(crate) fn serve_requests(g: &Graph, mb: &Mailbox, handler_fn: &HandlerFn) {
    // A plain load first: the atomic swap only when a request is waiting.
    if !mb.pending.load(Ordering::Relaxed) || !mb.pending.swap(false, Ordering::AcqRel) {
        return;
    }
    let reqs: Vec<Request> =
        std::mem::take(&mut *mb.queue.lock().unwrap_or_else(|e| e.into_inner()));
    for r in reqs {
        let res = match g
            .elems
            .get(r.elem)
            .and_then(|c| c.as_ref())
            .map(|c| c.try_borrow_mut())
        {
            Some(Ok(mut e)) => handler_fn(r.elem, &mut **e, &r.handler, r.value.as_deref()),
            _ => Err("element not on this thread".into()),
        };
        let _ = r.reply.send(res);
    }
}

fn serve_mailbox(g: &Graph, s: &mut State) {
    serve_requests(g, &s.shared.mailboxes[s.thread], &s.handler_fn);
}

fn poll_rings(g: &Graph, s: &mut State) -> bool {
    let mut work = false;
    for (ring, e, p) in &g.in_rings {
        if let Some(b) = ring.pop_batch(MAX_BATCH) {
            let n = b.len() as i64;
            s.counters[*e as usize].packets_in += b.len() as u64;
            activate(g, s, *e, |el, ctx| el.push(*p as usize, b, ctx));
            drain(g, s);
            s.shared.inflight.fetch_sub(n, Ordering::AcqRel);
            work = true;
        }
    }
    work
}

/// Run one thread until the router stops, then drain cross-thread rings.
pub(crate) fn thread_loop(g: &Graph, s: &mut State) {
    let mut idle = 0u32;
    let shared = s.shared.clone();
    while !shared.stop.load(Ordering::Acquire) {
        serve_mailbox(g, s);
        s.recent.set(0);
        let mut work = false;
        for &t in &g.tasks {
            let mut did = false;
            activate(g, s, t, |el, ctx| did = el.run_task(ctx));
            drain(g, s);
            work |= did;
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        work |= poll_rings(g, s);
        if !s.timers.is_empty() {
            let now = s.recent_ns();
            work |= run_timers(g, s, now);
        }
        if work {
            idle = 0;
            continue;
        }
        match s.clock {
            Clock::Sim(_) => {
                if let Some(t) = next_timer(s) {
                    s.clock = Clock::Sim(t);
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Clock::Real => {
                idle = idle.saturating_add(1);
                if idle < 64 {
                    std::hint::spin_loop();
                } else if idle < 256 {
                    std::thread::yield_now();
                } else {
                    let cap = Duration::from_micros(if g.in_rings.is_empty() { 1000 } else { 50 });
                    let wait = next_timer(s)
                        .map(|t| Duration::from_nanos(t.saturating_sub(s.clock.now_ns())))
                        .unwrap_or(cap)
                        .min(cap);
                    std::thread::sleep(wait);
                }
            }
        }
    }
    // Drain: keep delivering ring traffic until no packet is in flight anywhere.
    shared.draining.fetch_add(1, Ordering::AcqRel);
    loop {
        serve_mailbox(g, s);
        let work = poll_rings(g, s);
        if !work
            && shared.draining.load(Ordering::Acquire) == shared.nthreads
            && shared.inflight.load(Ordering::Acquire) == 0
        {
            break;
        }
        if !work {
            std::thread::yield_now();
        }
    }
}

/// End-of-run hook: call `elem`'s [`Element::flush`] once and deliver what
/// it emitted on this thread; true if it asked to be called again.
pub(crate) fn flush_element(g: &Graph, s: &mut State, elem: u32) -> bool {
    let mut more = false;
    s.recent.set(0);
    activate(g, s, elem, |el, ctx| more = el.flush(ctx));
    drain(g, s);
    more
}

/// Deliver what waits in this thread's incoming rings; true if any did.
pub(crate) fn settle_rings(g: &Graph, s: &mut State) -> bool {
    poll_rings(g, s)
}

/// Run `f` on element `elem` outside the data plane (before or after a run).
pub(crate) fn with_element<R>(
    g: &Graph,
    elem: usize,
    f: impl FnOnce(&mut dyn Element) -> R,
) -> Option<R> {
    let cell = g.elems.get(elem)?.as_ref()?;
    let mut e = cell.try_borrow_mut().ok()?;
    Some(f(&mut **e))
}
