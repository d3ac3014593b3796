//! Click's port-count specifications (`"1/1-2"`, `"1-/="`) and processing
//! codes (`"a/ah"`, `"h/l"`).

use std::fmt;

/// A range of allowed port counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// Minimum count.
    pub min: usize,
    /// Maximum count (`usize::MAX` = unbounded).
    pub max: usize,
}

impl Range {
    fn parse(s: &str) -> Option<Range> {
        let s = s.trim();
        if s == "-" {
            return Some(Range {
                min: 0,
                max: usize::MAX,
            });
        }
        if let Some((a, b)) = s.split_once('-') {
            let min = a.parse().ok()?;
            let max = if b.is_empty() {
                usize::MAX
            } else {
                b.parse().ok()?
            };
            return (min <= max).then_some(Range { min, max });
        }
        let n = s.parse().ok()?;
        Some(Range { min: n, max: n })
    }

    /// True if `n` is allowed.
    pub fn contains(&self, n: usize) -> bool {
        n >= self.min && n <= self.max
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.min, self.max) {
            (a, b) if a == b => write!(f, "exactly {a}"),
            (0, usize::MAX) => write!(f, "any number of"),
            (a, usize::MAX) => write!(f, "at least {a}"),
            (a, b) => write!(f, "{a} to {b}"),
        }
    }
}

/// A parsed port-count specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortCount {
    /// Allowed input counts.
    pub inputs: Range,
    /// Allowed output counts; `None` means "equal to the number of inputs" (`=`).
    pub outputs: Option<Range>,
}

impl PortCount {
    /// Parse Click's syntax: `IN/OUT` where each side is `N`, `N-M`, `N-` or
    /// `-`, and OUT may be `=` (same as inputs). A spec without `/` applies to
    /// both sides.
    pub fn parse(spec: &str) -> Option<PortCount> {
        match spec.split_once('/') {
            Some((i, o)) => Some(PortCount {
                inputs: Range::parse(i)?,
                outputs: if o.trim() == "=" {
                    None
                } else {
                    Some(Range::parse(o)?)
                },
            }),
            None => {
                let r = Range::parse(spec)?;
                Some(PortCount {
                    inputs: r,
                    outputs: Some(r),
                })
            }
        }
    }

    /// Allowed outputs given the actual number of inputs.
    pub fn outputs_for(&self, ninputs: usize) -> Range {
        self.outputs.unwrap_or(Range {
            min: ninputs,
            max: ninputs,
        })
    }
}

/// How a port moves packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Processing {
    /// The upstream element calls into this one.
    Push,
    /// The downstream element asks this one for packets.
    Pull,
    /// Either; resolved from the connections, like Click.
    Agnostic,
}

impl Processing {
    /// Click's name: `push` or `pull`.
    pub fn name(self) -> &'static str {
        match self {
            Processing::Push => "push",
            Processing::Pull => "pull",
            Processing::Agnostic => "agnostic",
        }
    }
}

/// A processing code like `"a/ah"`: one letter per port, the last repeated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessingCode {
    inputs: Vec<Processing>,
    outputs: Vec<Processing>,
}

fn letters(s: &str) -> Option<Vec<Processing>> {
    s.chars()
        .map(|c| match c {
            'h' => Some(Processing::Push),
            'l' => Some(Processing::Pull),
            'a' => Some(Processing::Agnostic),
            _ => None,
        })
        .collect()
}

impl ProcessingCode {
    /// Parse a code such as `"a/a"`, `"h/l"`, `"a/ah"`.
    pub fn parse(code: &str) -> Option<ProcessingCode> {
        let (i, o) = code.split_once('/')?;
        let (inputs, outputs) = (letters(i)?, letters(o)?);
        (!inputs.is_empty() && !outputs.is_empty()).then_some(ProcessingCode { inputs, outputs })
    }

    /// Processing of input `port`.
    pub fn input(&self, port: usize) -> Processing {
        self.inputs[port.min(self.inputs.len() - 1)]
    }

    /// Processing of output `port`.
    pub fn output(&self, port: usize) -> Processing {
        self.outputs[port.min(self.outputs.len() - 1)]
    }
}

/// Common processing codes.
pub mod codes {
    /// All ports agnostic.
    pub const AGNOSTIC: &str = "a/a";
    /// All ports push.
    pub const PUSH: &str = "h/h";
    /// All ports pull.
    pub const PULL: &str = "l/l";
    /// Push inputs, pull outputs (Queue).
    pub const PUSH_TO_PULL: &str = "h/l";
    /// Pull inputs, push outputs (Unqueue).
    pub const PULL_TO_PUSH: &str = "l/h";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_counts() {
        let p = PortCount::parse("1/1-2").unwrap();
        assert!(p.inputs.contains(1) && !p.inputs.contains(0));
        assert!(p.outputs_for(1).contains(2) && !p.outputs_for(1).contains(3));
        let q = PortCount::parse("1-/=").unwrap();
        assert_eq!(q.outputs_for(3), Range { min: 3, max: 3 });
        assert!(q.inputs.contains(100));
        let r = PortCount::parse("-/-").unwrap();
        assert!(r.inputs.contains(0) && r.outputs_for(0).contains(7));
        assert_eq!(
            PortCount::parse("0/1").unwrap().inputs,
            Range { min: 0, max: 0 }
        );
        assert_eq!(
            PortCount::parse("1").unwrap().outputs,
            Some(Range { min: 1, max: 1 })
        );
        assert!(PortCount::parse("x/1").is_none());
        assert!(PortCount::parse("3-1/1").is_none());
        assert_eq!(
            Range {
                min: 1,
                max: usize::MAX
            }
            .to_string(),
            "at least 1"
        );
    }

    #[test]
    fn processing_codes() {
        let c = ProcessingCode::parse("a/ah").unwrap();
        assert_eq!(c.input(0), Processing::Agnostic);
        assert_eq!(c.input(5), Processing::Agnostic);
        assert_eq!(c.output(0), Processing::Agnostic);
        assert_eq!(c.output(1), Processing::Push);
        assert_eq!(c.output(9), Processing::Push);
        assert_eq!(
            ProcessingCode::parse("h/l").unwrap().output(0),
            Processing::Pull
        );
        assert!(ProcessingCode::parse("x/a").is_none());
        assert!(ProcessingCode::parse("a").is_none());
    }
}
