//! Exports flow records with the protocol a keyword names: `IPFIXExport`
//! or `NetFlowV9Export` chosen at configuration time.
//!
//! # Synopsis
//! `FlowExport(PROTOCOL, [COLLECTOR, KEYWORDS])`
//!
//! # Ports
//! As `IPFIXExport`: one push input of flow records, an optional push
//! output passing them on.
//!
//! # Arguments
//! - `PROTOCOL` (word, mandatory; the first positional argument, or the
//!   keyword anywhere): `ipfix` (also `IPFIX`, `10`) or `v9` (also
//!   `netflow9`, `9`).
//! - Every other argument goes to the chosen exporter unchanged (see
//!   `IPFIXExport` and `NetFlowV9Export`); `ENTERPRISE` and `IGNORED` are
//!   IPFIX-only and are dropped for `v9`.
//!
//! Click's language has no conditionals and a class name cannot be a
//! variable, so a configuration that lets the command line pick the export
//! protocol (`nfs/flowmon.click`'s `PROTOCOL=v9`) uses this element.
//!
//! # Handlers
//! Those of the chosen exporter.
//!
//! # Example
//! ```click
//! define($PROTOCOL ipfix);
//! FlowAggregator -> FlowExport(PROTOCOL $PROTOCOL, COLLECTOR 127.0.0.1:4739);
//! ```
//!
//! # Implementation
//! The constructor removes `PROTOCOL` from the arguments and returns the
//! chosen exporter itself, so there is no extra call per batch. Its `IMPL`
//! keyword selects that exporter's fast or reference encoder. In replicated
//! mode each replica's exporter is an observation domain (source ID) of its
//! own, DOMAIN + replica index, with its own sequence numbers: see
//! `IPFIXExport`'s Implementation section for why.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `FlowExport` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FlowExport",
    port_count: "1/0-1",
    processing: "h/h",
    doc: element_doc!("flow/flowexport"),
    make,
};

fn keyword(arg: &str) -> Option<(&str, &str)> {
    let (k, v) = arg.trim().split_once(char::is_whitespace)?;
    (!k.is_empty() && k.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')).then(|| (k, v.trim()))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut rest: Vec<String> = ctx.args.clone();
    let proto = match rest
        .iter()
        .position(|a| matches!(keyword(a), Some(("PROTOCOL", _))))
    {
        Some(i) => keyword(&rest.remove(i)).map(|(_, v)| v.to_string()),
        None if rest.first().is_some_and(|a| keyword(a).is_none()) => {
            Some(rest.remove(0).trim().to_string())
        }
        None => None,
    };
    let Some(proto) = proto else {
        return Err(vec!["missing mandatory PROTOCOL argument".into()]);
    };
    let v9 = match proto.as_str() {
        "ipfix" | "IPFIX" | "10" => false,
        "v9" | "netflow9" | "9" => true,
        p => {
            return Err(vec![format!(
                "PROTOCOL: expected 'ipfix' or 'v9', not '{p}'"
            )])
        }
    };
    if v9 {
        rest.retain(|a| !matches!(keyword(a), Some(("ENTERPRISE" | "IGNORED", _))));
    }
    let inner = ConfigureCtx {
        name: ctx.name,
        config: ctx.config,
        args: rest,
        inputs: ctx.inputs,
        outputs: ctx.outputs,
        replica: ctx.replica,
        default_burst: ctx.default_burst,
    };
    if v9 {
        (super::netflowv9export::CLASS.make)(&inner)
    } else {
        (super::ipfixexport::CLASS.make)(&inner)
    }
}
