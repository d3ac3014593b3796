//! The element model: the [`Element`] trait, element classes, handlers and the
//! contexts through which elements move packets.
//!
//! Elements receive whole batches. A push element gets `push(port, batch)` and
//! sends batches on with [`Ctx::push`]; a pull element answers
//! `pull(port, max)` and may pull from its own inputs with [`Ctx::pull`].
//! Agnostic elements implement only [`Element::action`], which the default
//! `push` and `pull` apply in both modes (Click's `simple_action`).

use crate::batch::Batch;
use crate::ports::Processing;
use crate::sched::{Ctx, InitCtx};
use std::any::Any;

/// Handler flags.
pub mod hflags {
    /// Readable.
    pub const READ: u8 = 1;
    /// Writable.
    pub const WRITE: u8 = 2;
    /// A monotonically increasing counter (exported as a Prometheus counter).
    pub const COUNTER: u8 = 4;
    /// A numeric value that goes up and down (exported as a Prometheus gauge).
    pub const GAUGE: u8 = 8;
}

/// A class-specific handler an element offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerSpec {
    /// Handler name, e.g. `count`.
    pub name: &'static str,
    /// Combination of [`hflags`].
    pub flags: u8,
}

impl HandlerSpec {
    /// A read-only counter handler.
    pub const fn counter(name: &'static str) -> HandlerSpec {
        HandlerSpec {
            name,
            flags: hflags::READ | hflags::COUNTER,
        }
    }
    /// A read-only gauge handler.
    pub const fn gauge(name: &'static str) -> HandlerSpec {
        HandlerSpec {
            name,
            flags: hflags::READ | hflags::GAUGE,
        }
    }
    /// A read-only handler.
    pub const fn read(name: &'static str) -> HandlerSpec {
        HandlerSpec {
            name,
            flags: hflags::READ,
        }
    }
    /// A write-only handler.
    pub const fn write(name: &'static str) -> HandlerSpec {
        HandlerSpec {
            name,
            flags: hflags::WRITE,
        }
    }
    /// A read/write handler.
    pub const fn read_write(name: &'static str) -> HandlerSpec {
        HandlerSpec {
            name,
            flags: hflags::READ | hflags::WRITE,
        }
    }
}

/// What a source or sink reports for the end-of-run summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoCounts {
    /// True for sources, false for sinks.
    pub source: bool,
    /// Packets produced or consumed.
    pub packets: u64,
    /// Bytes produced or consumed.
    pub bytes: u64,
}

/// Packets dropped, by reason ([`Element::drops`]).
pub type Drops = Vec<(&'static str, u64)>;
/// Packets sent to an error output, by port and reason
/// ([`Element::diverted`]).
pub type Diverted = Vec<(usize, &'static str, u64)>;

/// Reason names paired with their counts, for [`Element::drops`] (reasons
/// without packets left out).
pub fn named_counts(names: &[&'static str], counts: &[u64]) -> Drops {
    names
        .iter()
        .zip(counts)
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| (*r, *n))
        .collect()
}

/// Bad packets by reason, for an element with Click's optional error
/// output 1, which takes them all when connected (`out1`): what
/// [`Element::drops`] reports (nothing when they went to output 1) and what
/// [`Element::diverted`] reports (nothing when they were dropped).
pub fn drops_or_diverted(out1: bool, bad: Vec<(&'static str, u64)>) -> (Drops, Diverted) {
    if out1 {
        (
            Vec::new(),
            bad.into_iter().map(|(r, n)| (1, r, n)).collect(),
        )
    } else {
        (bad, Vec::new())
    }
}

/// A packet-processing element.
pub trait Element: Send + 'static {
    /// Packets arrive on push input `port`. The default applies
    /// [`action`](Self::action) and pushes the result to output 0.
    fn push(&mut self, port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let _ = port;
        let b = self.action(batch, ctx);
        ctx.push(0, b);
    }

    /// A downstream element asks for up to `max` packets from pull output
    /// `port`. The default pulls from input 0 and applies
    /// [`action`](Self::action).
    fn pull(&mut self, port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        let _ = port;
        let b = ctx.pull(0, max)?;
        let b = self.action(b, ctx);
        (!b.is_empty()).then_some(b)
    }

    /// Per-batch processing shared by push and pull mode (Click's
    /// `simple_action`): return the packets that continue on output 0;
    /// others may be pushed to other (push) outputs or dropped.
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let _ = ctx;
        batch
    }

    /// Called once after every element is configured, before the run.
    fn initialize(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), String> {
        let _ = ctx;
        Ok(())
    }

    /// True if this element has a task (a source, Unqueue, a pulling sink).
    /// Asked after `initialize`.
    fn is_task(&self) -> bool {
        false
    }

    /// Run the task once; return true if it did any work.
    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let _ = ctx;
        false
    }

    /// The element's timer fired (see [`Ctx::schedule_at`]).
    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let _ = ctx;
    }

    /// Class-specific handlers.
    fn handlers(&self) -> &[HandlerSpec] {
        &[]
    }

    /// Read a class-specific handler; `None` if there is no such handler.
    fn read_handler(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// Write a class-specific handler; `None` if there is no such handler.
    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let _ = (name, value);
        None
    }

    /// The run is ending: emit what the element still holds (flow tables,
    /// buffered records) with `ctx.push`. Called after the last scheduler
    /// round, before [`cleanup`](Self::cleanup), once per element in
    /// topological order (upstream first), and again while it returns true:
    /// emit at most a batch or so per call and return true if more is left.
    fn flush(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let _ = ctx;
        false
    }

    /// Called when the run ends (flush files, close sockets).
    fn cleanup(&mut self) {}

    /// Task placement requests (`StaticThreadSched`): element name and thread.
    fn thread_requests(&self) -> Vec<(String, usize)> {
        Vec::new()
    }

    /// Packet counts for the end-of-run summary, for sources and sinks.
    fn io_counts(&self) -> Option<IoCounts> {
        None
    }

    /// Packets this element dropped, by reason, for the end-of-run summary.
    /// Packets it pushed to an error output instead are not drops: see
    /// [`Element::diverted`].
    fn drops(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Bad packets this element pushed to an error output rather than
    /// dropping them, by output port and reason, for the end-of-run summary
    /// (Click's checkers and parsers send them to output 1 when it is
    /// connected, and drop them otherwise).
    fn diverted(&self) -> Vec<(usize, &'static str, u64)> {
        Vec::new()
    }

    /// Other counters for the end-of-run summary (summed over replicas),
    /// e.g. a flow meter's packets, microflows and flows.
    fn summary_counts(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// True for a driver script (DriverManager): while one exists, elements'
    /// stop requests are counted for it instead of stopping the router.
    fn manages_driver_stop(&self) -> bool {
        false
    }

    /// True if the element calls other elements' handlers while it
    /// processes packets ([`Ctx::call_handler`], e.g. Counter's
    /// `COUNT_CALL`). A push into such an element waits on the thread's work
    /// stack until no other element is running; other pushes call the next
    /// element directly, so the elements upstream of it are busy meanwhile
    /// and a handler call to one of them fails. Asked once, after
    /// `initialize`.
    fn calls_handlers(&self) -> bool {
        false
    }

    /// Downcasting support.
    fn as_any(&self) -> &dyn Any;
}

/// Everything an element class constructor learns about its element.
pub struct ConfigureCtx<'a> {
    /// Element name (`c`, `Counter@3`, `outer/inner`).
    pub name: &'a str,
    /// The configuration string, parameters substituted.
    pub config: &'a str,
    /// The configuration string split into arguments (Click's `cp_argvec`).
    pub args: Vec<String>,
    /// Processing of each connected input port.
    pub inputs: &'a [Processing],
    /// Processing of each connected output port.
    pub outputs: &'a [Processing],
    /// Replica index and count in replicated mode (`(0, 1)` otherwise).
    pub replica: (usize, usize),
    /// Default `BURST` for sources and pulling tasks (see
    /// `RouterOptions::default_burst`).
    pub default_burst: usize,
}

impl ConfigureCtx<'_> {
    /// Number of input ports in use.
    pub fn ninputs(&self) -> usize {
        self.inputs.len()
    }
    /// Number of output ports in use.
    pub fn noutputs(&self) -> usize {
        self.outputs.len()
    }
    /// True if input `port` is push.
    pub fn input_is_push(&self, port: usize) -> bool {
        self.inputs.get(port) == Some(&Processing::Push)
    }
    /// True if output `port` is push.
    pub fn output_is_push(&self, port: usize) -> bool {
        self.outputs.get(port) == Some(&Processing::Push)
    }
}

/// Constructor of an element from its configuration.
pub type MakeFn = fn(&ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>>;

/// An element class: what `Class(config)` in a configuration refers to.
#[derive(Clone, Copy)]
pub struct ElementClass {
    /// Click class name.
    pub name: &'static str,
    /// Port-count specification, e.g. `"1/1-2"`.
    pub port_count: &'static str,
    /// Processing code, e.g. `"a/ah"`.
    pub processing: &'static str,
    /// The element's reference documentation (its source file's doc comment).
    pub doc: &'static str,
    /// Constructor.
    pub make: MakeFn,
}

impl std::fmt::Debug for ElementClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElementClass")
            .field("name", &self.name)
            .finish()
    }
}
