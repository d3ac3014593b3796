//! Fusing the SCION step elements into one `SCIONRouter`, a configuration
//! transformation in the spirit of Click's `click-xform`.
//!
//! `nfs/scion-br.click` builds the border router from one element per
//! pipeline step around a `SCIONConfig`, which keeps the pipeline open to
//! other elements but costs about five times the fused `SCIONRouter`'s
//! time per packet (`docs/performance.md`, issue 7). When a configuration
//! holds the whole step graph wired exactly as the fused router works
//! internally, [`fuse`] replaces it with one `SCIONRouter`: the same step
//! functions, the same output frames and the same handlers (the router
//! takes the `SCIONConfig`'s name and configuration, and `SCIONConfig`'s
//! handlers are `SCIONRouter`'s), at the fused router's speed. Graphs that
//! differ in any way (another element between two steps, a step output
//! wired elsewhere, a second user of the `SCIONConfig`) are left as they
//! are. `linerate run --no-fuse` keeps the steps.
//!
//! The pattern, by output port of each step (0 is the next step unless
//! said otherwise), with SENT, SLOW and DROP each one target outside the
//! pattern (SLOW and DROP may also be left unconnected everywhere, but DROP
//! only if SLOW is too, as `SCIONRouter`'s ports are 1 and 2):
//!
//! | step | outputs |
//! |---|---|
//! | `SCIONParse` | 0 `SCIONCheckHop`, 1 `SCIONOneHop`, 2 SLOW, 3 DROP |
//! | `SCIONCheckHop` | 0 `SCIONVerifyHop`, 1 `SCIONSCMPError`, 2 DROP |
//! | `SCIONVerifyHop` | 0 `SCIONRoute`, 1 `SCIONSCMPError`, 2 DROP |
//! | `SCIONRoute` | 0 `SCIONCheckEgress`, 1 `SCIONVerifyHop`, 2 `SCIONDeliver`, 3 `SCIONSCMPError`, 4 SLOW, 5 DROP |
//! | `SCIONCheckEgress` | 0 `SCIONAdvancePath`, 1 `SCIONSCMPError`, 2 SLOW, 3 DROP |
//! | `SCIONAdvancePath` | 0 `SCIONEgress`, 1 DROP |
//! | `SCIONEgress` | 0 SENT, 1 DROP |
//! | `SCIONOneHop` | 0 SENT, 1 DROP |
//! | `SCIONDeliver` | 0 SENT, 1 `SCIONSCMPError`, 2 DROP |
//! | `SCIONSCMPError` | 0 SENT, 1 DROP |
//!
//! Only `SCIONParse`'s input may be fed from outside. The replacement
//! `SCIONRouter` gets `SCIONParse`'s inputs and sends output 0 to SENT, 1
//! to SLOW and 2 to DROP. Within one batch the fused router may emit the
//! frames for SENT in another order than the steps do (SCMP replies, for
//! example, leave with the frames they were built beside); the frames
//! themselves are the same (`steps_equal_fused` in the tests).

use linerate_lang::{Config, Connection, ElementDecl};
use std::collections::BTreeMap;

/// Where a step's output port goes in the pattern.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum To {
    /// Input 0 of the step at this index of [`STEPS`].
    Step(usize),
    /// The frames the router sends (`SCIONRouter` output 0).
    Sent,
    /// The slow path (`SCIONRouter` output 1).
    Slow,
    /// Silently dropped frames (`SCIONRouter` output 2).
    Drop,
}

use To::{Drop, Sent, Slow, Step};

const CHECK_HOP: usize = 1;
const VERIFY_HOP: usize = 2;
const ROUTE: usize = 3;
const CHECK_EGRESS: usize = 4;
const ADVANCE: usize = 5;
const EGRESS: usize = 6;
const ONE_HOP: usize = 7;
const DELIVER: usize = 8;
const SCMP: usize = 9;

/// The step classes and where each output port goes, output 0 first.
const STEPS: [(&str, &[To]); 10] = [
    ("SCIONParse", &[Step(CHECK_HOP), Step(ONE_HOP), Slow, Drop]),
    ("SCIONCheckHop", &[Step(VERIFY_HOP), Step(SCMP), Drop]),
    ("SCIONVerifyHop", &[Step(ROUTE), Step(SCMP), Drop]),
    (
        "SCIONRoute",
        &[
            Step(CHECK_EGRESS),
            Step(VERIFY_HOP),
            Step(DELIVER),
            Step(SCMP),
            Slow,
            Drop,
        ],
    ),
    ("SCIONCheckEgress", &[Step(ADVANCE), Step(SCMP), Slow, Drop]),
    ("SCIONAdvancePath", &[Step(EGRESS), Drop]),
    ("SCIONEgress", &[Sent, Drop]),
    ("SCIONOneHop", &[Sent, Drop]),
    ("SCIONDeliver", &[Sent, Step(SCMP), Drop]),
    ("SCIONSCMPError", &[Sent, Drop]),
];

/// Replaces every complete SCION step graph in `config` with one
/// `SCIONRouter` (see the module documentation). Returns one line per
/// replacement, for the user.
pub fn fuse(config: &mut Config) -> Vec<String> {
    let mut notes = Vec::new();
    let configs: Vec<usize> = (0..config.elements.len())
        .filter(|&i| config.elements[i].class == "SCIONConfig")
        .collect();
    // Indices shift as graphs are replaced: find each SCIONConfig by name.
    let names: Vec<String> = configs
        .iter()
        .map(|&i| config.elements[i].name.clone())
        .collect();
    for name in names {
        let Some(c) = config.element_index(&name) else {
            continue;
        };
        if let Some(m) = find(config, c) {
            replace(config, c, &m);
            notes.push(format!(
                "the SCION steps around '{name}' run fused as one SCIONRouter '{name}' \
                 (the same frames and handlers; --no-fuse keeps the steps)"
            ));
        }
    }
    notes
}

/// A complete step graph around one `SCIONConfig`.
struct Match {
    /// Element index of each step, in [`STEPS`] order.
    steps: [usize; 10],
    /// The (element, input port) each of SENT, SLOW and DROP goes to.
    sent: (usize, usize),
    slow: Option<(usize, usize)>,
    drop: Option<(usize, usize)>,
}

/// The configuration name a step element's configuration string gives:
/// `br` or `CONFIG br`.
fn config_arg(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix("CONFIG")
        .filter(|r| r.starts_with(char::is_whitespace))
        .map_or(s, str::trim)
}

/// The element `name` refers to from element `me`, as the steps look it
/// up: in `me`'s compound first, then each enclosing one.
fn resolve(config: &Config, me: &str, name: &str) -> Option<usize> {
    super::steps::scoped(me, name).find_map(|full| config.element_index(&full))
}

fn find(config: &Config, c: usize) -> Option<Match> {
    let mut steps = [usize::MAX; 10];
    for (i, e) in config.elements.iter().enumerate() {
        let Some(k) = STEPS.iter().position(|(class, _)| *class == e.class) else {
            continue;
        };
        if resolve(config, &e.name, config_arg(&e.config)) != Some(c) {
            continue;
        }
        if steps[k] != usize::MAX {
            return None;
        }
        steps[k] = i;
    }
    if steps.contains(&usize::MAX) {
        return None;
    }
    let step_of = |i: usize| steps.iter().position(|&s| s == i);
    let mut sent = None;
    let mut slow: Option<Option<(usize, usize)>> = None;
    let mut drop: Option<Option<(usize, usize)>> = None;
    // One target per group, the same for every port of the group.
    fn agree(group: &mut Option<Option<(usize, usize)>>, t: Option<(usize, usize)>) -> bool {
        match group {
            None => {
                *group = Some(t);
                true
            }
            Some(g) => *g == t,
        }
    }
    for (k, &(_, outs)) in STEPS.iter().enumerate() {
        let from = steps[k];
        let conns: Vec<&Connection> = config
            .connections
            .iter()
            .filter(|x| x.from == from)
            .collect();
        if conns.iter().any(|x| x.from_port >= outs.len()) {
            return None;
        }
        for (port, &to) in outs.iter().enumerate() {
            let mut at = conns.iter().filter(|x| x.from_port == port);
            let target = at.next().map(|x| (x.to, x.to_port));
            if at.next().is_some() {
                return None;
            }
            let ok = match to {
                Step(j) => target == Some((steps[j], 0)),
                _ if target.is_some_and(|(t, _)| step_of(t).is_some() || t == c) => false,
                Sent => target.is_some() && agree(&mut sent, target),
                Slow => agree(&mut slow, target),
                Drop => agree(&mut drop, target),
            };
            if !ok {
                return None;
            }
        }
    }
    // Into the steps only the pattern's own edges and SCIONParse's input;
    // nothing connects to the SCIONConfig.
    for x in &config.connections {
        if x.from == c || x.to == c {
            return None;
        }
        if let Some(k) = step_of(x.to) {
            if x.to_port != 0 || (k != 0 && step_of(x.from).is_none()) {
                return None;
            }
            if k == 0 && step_of(x.from).is_some() {
                return None;
            }
        }
    }
    let (slow, drop) = (slow.flatten(), drop.flatten());
    if slow.is_none() && drop.is_some() {
        return None;
    }
    Some(Match {
        steps,
        sent: sent.flatten()?,
        slow,
        drop,
    })
}

fn replace(config: &mut Config, c: usize, m: &Match) {
    let decl = &config.elements[c];
    let router = ElementDecl {
        name: decl.name.clone(),
        class: "SCIONRouter".to_string(),
        config: decl.config.clone(),
        loc: decl.loc.clone(),
    };
    let parse = m.steps[0];
    let removed = |i: usize| m.steps.contains(&i);
    // New index of every element kept; the router takes the SCIONConfig's.
    let mut index = BTreeMap::new();
    let mut elements = Vec::with_capacity(config.elements.len() - m.steps.len());
    for (i, e) in config.elements.iter().enumerate() {
        if removed(i) {
            continue;
        }
        index.insert(i, elements.len());
        elements.push(if i == c { router.clone() } else { e.clone() });
    }
    let r = index[&c];
    let mut connections: Vec<Connection> = Vec::with_capacity(config.connections.len());
    let mut outputs = vec![(0, m.sent)];
    outputs.extend(m.slow.map(|t| (1, t)));
    outputs.extend(m.drop.map(|t| (2, t)));
    // The router's outputs take the location of the connections they stand for.
    for (port, (to, to_port)) in outputs {
        let loc = config
            .connections
            .iter()
            .find(|x| removed(x.from) && x.to == to && x.to_port == to_port)
            .map(|x| x.loc.clone())
            .unwrap_or_else(|| router.loc.clone());
        connections.push(Connection {
            from: r,
            from_port: port,
            to: index[&to],
            to_port,
            loc,
        });
    }
    for x in &config.connections {
        if x.to == parse && !removed(x.from) {
            connections.push(Connection {
                from: index[&x.from],
                from_port: x.from_port,
                to: r,
                to_port: 0,
                loc: x.loc.clone(),
            });
        } else if !removed(x.from) && !removed(x.to) {
            connections.push(Connection {
                from: index[&x.from],
                to: index[&x.to],
                ..x.clone()
            });
        }
    }
    connections.sort_by_key(|x| (x.from, x.from_port, x.to, x.to_port));
    connections.dedup_by_key(|x| (x.from, x.from_port, x.to, x.to_port));
    config.elements = elements;
    config.connections = connections;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scion::steps::{Ports, Step as _, NONE};

    /// The pattern's SCMP, slow and drop ports are the ones the step
    /// elements use.
    #[test]
    fn pattern_matches_the_steps_ports() {
        use crate::scion::*;
        let ports: [Ports; 10] = [
            scionparse::Parse::PORTS,
            scioncheckhop::CheckHop::PORTS,
            scionverifyhop::VerifyHop::PORTS,
            scionroute::Route::PORTS,
            scioncheckegress::CheckEgress::PORTS,
            scionadvancepath::AdvancePath::PORTS,
            scionegress::Egress::PORTS,
            sciononehop::OneHop::PORTS,
            sciondeliver::Deliver::PORTS,
            scionscmperror::ScmpError::PORTS,
        ];
        for (k, (class, outs)) in STEPS.iter().enumerate() {
            let at = |t: To| outs.iter().position(|&o| o == t).unwrap_or(NONE);
            assert_eq!(at(Step(SCMP)), ports[k].scmp, "{class}");
            assert_eq!(at(Slow), ports[k].slow, "{class}");
            assert_eq!(at(Drop), ports[k].drop, "{class}");
        }
    }
}
