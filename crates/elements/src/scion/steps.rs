//! What the SCION step elements (`SCIONParse` ... `SCIONSCMPError`) share:
//! the configuration they name (a `SCIONConfig` element's data plane,
//! found by element name), the annotations that carry a packet's state from
//! one step to the next, and the element wrapper that locks the
//! configuration once per batch and pushes each output's batch.
//!
//! # Annotations (user area; the step elements use these bytes)
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 1 | ingress interface index (`0xff`: the internal network) |
//! | 1 | 1 | 1 once `SCIONParse` has annotated a standard path |
//! | 2 | 1 | number of pending path edits |
//! | 3 | 1 | egress interface index (after `SCIONCheckEgress`) |
//! | 4 | 2 | offset of the SCION header in the frame |
//! | 6 | 2 | length of the SCION packet |
//! | 8 | 1 | SCMP type of an error |
//! | 9 | 1 | SCMP code |
//! | 10 | 2 | SCMP pointer |
//! | 16 | 24 | pending path edits: up to 6 of (offset, value), 2 bytes each |
//! | 40 | 8 | the current hop: path offset, PathMeta (advanced past a crossover), flags |
//!
//! Path edits (SegID updates, PathMeta advances) are recorded, not written:
//! the header stays as received until `SCIONEgress`, `SCIONDeliver` or
//! `SCIONSCMPError` applies them, so slow-path and dropped frames leave
//! untouched, and every step reads the header as it arrived, as the fused
//! `SCIONRouter`'s stage 1 does.

use super::core::{self, Dataplane, Edit, Frame, Hop, Verdict};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, InitCtx, Packet};
use linerate_wire::scion::header;
use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Where a step sends packets that leave the pipeline: its SCMP-error,
/// slow-path and drop outputs (`NONE`: the step has no such output; a
/// packet sent there is freed). Output 0 is always the next step.
#[derive(Clone, Copy)]
pub(crate) struct Ports {
    pub scmp: usize,
    pub slow: usize,
    pub drop: usize,
}

/// No such output.
pub(crate) const NONE: usize = usize::MAX;

/// The ports of a step whose only side output is the drop output 1.
pub(crate) const DROP_ONLY: Ports = Ports {
    scmp: NONE,
    slow: NONE,
    drop: 1,
};

/// Output 0: the next step.
pub(crate) const NEXT: usize = 0;

const INGRESS: usize = 0;
const FLAGS: usize = 1;
const NEDITS: usize = 2;
const EGRESS: usize = 3;
const OFF: usize = 4;
const LEN: usize = 6;
const SCMP_T: usize = 8;
const SCMP_C: usize = 9;
const SCMP_PTR: usize = 10;
const EDITS: usize = 16;
const MAX_EDITS: usize = 6;
const HOP: usize = 40;

/// The data plane and clock a `SCIONConfig` owns.
pub(crate) struct Shared {
    pub dp: Dataplane,
    /// Whether the clock is fixed (`NOW`, the `now` handler).
    pub fixed_now: bool,
}

/// A configuration as the step elements hold it.
pub(crate) type Config = Arc<Mutex<Shared>>;

type Entry = (String, usize, Weak<Mutex<Shared>>);

thread_local! {
    /// Configurations made on this thread (element name, replica): a
    /// router's elements are all made, then all initialized, on one thread,
    /// so the step elements find theirs in `initialize`.
    static CONFIGS: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Records configuration `name` of replica `replica`.
pub(crate) fn register(name: &str, replica: usize, cfg: &Config) {
    CONFIGS.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|(n, r, w)| w.strong_count() > 0 && !(n == name && *r == replica));
        c.push((name.to_string(), replica, Arc::downgrade(cfg)));
    });
}

/// The configuration `name` as seen from element `me`: Click's name
/// resolution inside compounds (`a/b/me` finds `a/b/name`, `a/name`, then
/// `name`).
fn lookup(me: &str, name: &str, replica: usize) -> Option<Config> {
    scoped(me, name).find_map(|full| {
        CONFIGS.with(|c| {
            c.borrow()
                .iter()
                .find(|(n, r, _)| *n == full && *r == replica)
                .and_then(|(_, _, w)| w.upgrade())
        })
    })
}

/// The full names `name` may mean from element `me`, in the order Click
/// looks them up: `me`'s compound first, then each enclosing one
/// (`a/b/step`: `a/b/br`, `a/br`, `br`).
pub(crate) fn scoped<'a>(me: &'a str, name: &'a str) -> impl Iterator<Item = String> + 'a {
    let mut scope = Some(me);
    std::iter::from_fn(move || {
        let s = scope?;
        let outer = s.rfind('/').map_or("", |i| &s[..i]);
        scope = (!outer.is_empty()).then_some(outer);
        Some(if outer.is_empty() {
            name.to_string()
        } else {
            format!("{outer}/{name}")
        })
    })
}

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One step's work on a batch, with the configuration locked.
pub(crate) trait Step: Default + Send + 'static {
    /// The step's side outputs.
    const PORTS: Ports;
    /// Puts every packet of `batch` on one of `outs`.
    fn run(&mut self, sh: &mut Shared, batch: Batch, outs: &mut Outs);
}

/// The output batches of a step.
pub(crate) struct Outs {
    b: [Batch; 6],
    ports: Ports,
}

impl Outs {
    /// Sends `p` to output `port`.
    #[inline]
    pub fn put(&mut self, port: usize, p: Packet) {
        if let Some(b) = self.b.get_mut(port) {
            b.push(p);
        }
    }
    /// Sends `p` to the drop output (already counted).
    #[inline]
    pub fn drop(&mut self, p: Packet) {
        self.put(self.ports.drop, p);
    }
    /// Sends `p` where verdict `v` of a step leads: an SCMP error (recorded
    /// in the annotations), the slow path or a counted drop.
    #[inline]
    pub fn end(&mut self, dp: &mut Dataplane, mut p: Packet, v: Verdict) {
        match v {
            Verdict::Scmp(t, c, ptr) => {
                let a = p.anno_mut();
                a.set_u8(SCMP_T, t);
                a.set_u8(SCMP_C, c);
                a.set_u16(SCMP_PTR, ptr);
                self.put(self.ports.scmp, p);
            }
            Verdict::Slow => {
                dp.stats.slow += 1;
                self.put(self.ports.slow, p);
            }
            Verdict::Drop(d) => {
                dp.count_drop(d);
                self.drop(p);
            }
            Verdict::Forward(_) | Verdict::Deliver(_) => self.put(NEXT, p),
        }
    }
    /// Sends `p` after `Dataplane::dispatch` (which counted): sent, or
    /// dropped.
    #[inline]
    pub fn sent(&mut self, p: Packet, v: Verdict) {
        match v {
            Verdict::Forward(_) | Verdict::Deliver(_) => self.put(NEXT, p),
            _ => self.drop(p),
        }
    }
    /// Drops a packet whose annotations do not describe a SCION packet
    /// (a step wired without `SCIONParse` in front).
    #[inline]
    pub fn malformed(&mut self, dp: &mut Dataplane, p: Packet) {
        self.end(dp, p, Verdict::Drop(core::Drop::Malformed));
    }
    /// The last step of a forwarded or delivered packet: applies its
    /// pending path edits, rewrites the underlay for verdict `v`
    /// (`Dataplane::dispatch`) and sends it, or drops it as malformed if
    /// its annotations no longer describe the frame.
    #[inline]
    pub fn dispatch(&mut self, dp: &mut Dataplane, mut p: Packet, v: Verdict) {
        match apply(&mut p, dp) {
            Some((fr, delta)) => {
                let (v, _) = dp.dispatch(&mut p, &fr, v, delta);
                self.sent(p, v);
            }
            None => self.malformed(dp, p),
        }
    }
}

/// A step element: the name of its configuration and the step.
pub(crate) struct StepElement<S> {
    config: String,
    cfg: Option<Config>,
    step: S,
    outs: Outs,
}

/// Makes a step element whose only argument is the configuration's name.
fn make<S: Step>(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::Args;
    let mut a = Args::new(&ctx.args);
    let config: Option<String> = a.read_mp("CONFIG");
    a.complete().map_err(|e| e.0)?;
    let config =
        config.ok_or_else(|| vec!["CONFIG: missing (a SCIONConfig's name)".to_string()])?;
    Ok(Box::new(StepElement {
        config,
        cfg: None,
        step: S::default(),
        outs: Outs {
            b: Default::default(),
            ports: S::PORTS,
        },
    }))
}

impl<S: Step> Element for StepElement<S> {
    fn initialize(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), String> {
        let cfg = lookup(ctx.name(), &self.config, ctx.replica().0)
            .ok_or_else(|| format!("no SCIONConfig named '{}'", self.config))?;
        self.cfg = Some(cfg);
        Ok(())
    }

    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let Some(cfg) = &self.cfg else {
            return;
        };
        self.step.run(&mut lock(cfg), batch, &mut self.outs);
        for (i, b) in self.outs.b.iter_mut().enumerate() {
            if !b.is_empty() {
                let b = std::mem::take(b);
                if i < ctx.noutputs() {
                    ctx.push(i, b);
                }
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The element class of a step.
pub(crate) const fn class<S: Step>(
    name: &'static str,
    port_count: &'static str,
    doc: &'static str,
) -> ElementClass {
    ElementClass {
        name,
        port_count,
        processing: "h/h",
        doc,
        make: make::<S>,
    }
}

/// Starts a packet's annotations (`SCIONParse`).
pub(crate) fn start(p: &mut Packet, fr: &Frame) {
    let a = p.anno_mut();
    a.set_u8(INGRESS, fr.ingress);
    a.set_u8(FLAGS, 0);
    a.set_u8(NEDITS, 0);
    a.set_u16(OFF, fr.scion_off);
    a.set_u16(LEN, fr.scion_len);
}

/// The arrival interface index (inner `None`: the internal network);
/// `None` when the annotation names no interface of `dp`.
#[inline]
pub(crate) fn ingress(p: &Packet, dp: &Dataplane) -> Option<Option<usize>> {
    let i = p.anno().u8(INGRESS);
    if i == core::NO_IF {
        return Some(None);
    }
    (usize::from(i) < dp.ifaces.len()).then_some(Some(usize::from(i)))
}

/// The SCION packet of `p`, as its annotations place it.
#[inline]
pub(crate) fn scion(p: &Packet) -> Option<&[u8]> {
    let (o, n) = (p.anno().u16(OFF), p.anno().u16(LEN));
    p.data()
        .get(usize::from(o)..usize::from(o) + usize::from(n))
}

/// The SCION packet's header view (checked again: cheap, and a step never
/// trusts its input).
#[inline]
pub(crate) fn header(p: &Packet) -> Option<header::Packet<&[u8]>> {
    header::Packet::new_checked(scion(p)?).ok()
}

/// A standard-path packet's current hop, header and arrival interface.
pub(crate) type At<'a> = (Hop, header::Packet<&'a [u8]>, Option<usize>);

/// Where a standard-path packet is: its current hop (after a crossover,
/// the next segment's first), its header and its arrival interface. The
/// hop comes from the annotations (checked against the packet), not from
/// parsing the path again.
#[inline]
pub(crate) fn at<'a>(p: &'a Packet, dp: &Dataplane) -> Option<At<'a>> {
    let a = p.anno();
    if a.u8(FLAGS) != 1 {
        return None;
    }
    let h = header(p)?;
    let mut b = [0u8; 8];
    b.copy_from_slice(&a.user[HOP..HOP + 8]);
    let x = Hop::from_bytes(b, h.as_ref())?;
    (x.po() == h.path_offset()).then_some(())?;
    Some((x, h, ingress(p, dp)?))
}

/// Records a standard-path packet's current hop (`SCIONParse`,
/// `SCIONRoute` after a crossover).
#[inline]
pub(crate) fn set_hop(p: &mut Packet, x: &Hop) {
    let a = p.anno_mut();
    a.user[HOP..HOP + 8].copy_from_slice(&x.to_bytes());
    a.set_u8(FLAGS, 1);
}

/// Appends pending path edits; false when there is no room (a packet sent
/// around the graph more often than the pipeline allows).
#[inline]
pub(crate) fn add_edits(p: &mut Packet, edits: &[Edit]) -> bool {
    let a = p.anno_mut();
    let n = usize::from(a.u8(NEDITS));
    if n + edits.len() > MAX_EDITS {
        return false;
    }
    for (k, e) in edits.iter().enumerate() {
        a.set_u16(EDITS + 4 * (n + k), e.off);
        a.set_u16(EDITS + 4 * (n + k) + 2, e.val);
    }
    a.set_u8(NEDITS, (n + edits.len()) as u8);
    true
}

/// The frame with its endpoints re-read from the (untouched) underlay, and
/// the pending path edits applied: the ones'-complement change they made.
#[inline]
pub(crate) fn apply(p: &mut Packet, dp: &Dataplane) -> Option<(Frame, u32)> {
    let mut fr = Dataplane::underlay(p.data()).ok()?;
    let a = p.anno();
    if fr.scion_off != a.u16(OFF) || fr.scion_len != a.u16(LEN) {
        return None;
    }
    fr.ingress = ingress(p, dp)?.map_or(core::NO_IF, |i| i as u8);
    let a = p.anno();
    let n = usize::from(a.u8(NEDITS)).min(MAX_EDITS);
    let mut edits = [Edit::default(); MAX_EDITS];
    for (k, e) in edits.iter_mut().take(n).enumerate() {
        *e = Edit::new(a.u16(EDITS + 4 * k), a.u16(EDITS + 4 * k + 2));
    }
    let s = fr.scion_mut(p.data_mut());
    if edits[..n].iter().any(|e| usize::from(e.off) + 2 > s.len()) {
        return None;
    }
    let delta = core::apply_edits(s, edits[..n].iter());
    p.anno_mut().set_u8(NEDITS, 0);
    Some((fr, delta))
}

/// Records the egress interface index (`SCIONCheckEgress`).
pub(crate) fn set_egress(p: &mut Packet, eg: usize) {
    p.anno_mut().set_u8(EGRESS, eg as u8);
}

/// The egress interface index, if it names an interface of `dp`.
pub(crate) fn egress(p: &Packet, dp: &Dataplane) -> Option<usize> {
    let e = usize::from(p.anno().u8(EGRESS));
    (e < dp.ifaces.len()).then_some(e)
}

/// The SCMP error a step recorded: (type, code, pointer).
pub(crate) fn scmp_error(p: &Packet) -> (u8, u8, u16) {
    let a = p.anno();
    (a.u8(SCMP_T), a.u8(SCMP_C), a.u16(SCMP_PTR))
}

#[cfg(test)]
mod tests {
    use super::scoped;

    #[test]
    fn scoped_names_follow_clicks_compound_lookup() {
        let names = |me| scoped(me, "br").collect::<Vec<_>>();
        assert_eq!(names("a/b/step"), ["a/b/br", "a/br", "br"]);
        assert_eq!(names("step"), ["br"]);
    }
}
