//! Places tasks on threads.
//!
//! # Synopsis
//! `StaticThreadSched(ELEMENT THREAD, ...)`
//!
//! # Ports
//! None.
//!
//! # Arguments
//! Each argument is an element name and a thread number. The element's task
//! runs on that thread (modulo the number of threads given by `--threads`).
//! Elements it pushes to run on the same thread unless another thread reached
//! them first; packets then cross threads through a lock-free ring.
//!
//! # Handlers
//! Only the generic ones.
//!
//! # Example
//! ```click
//! src :: FromDump(in.pcap, STOP true) -> q :: Queue -> uq :: Unqueue -> Discard;
//! StaticThreadSched(src 0, uq 1);
//! ```

use linerate_runtime::{ConfigureCtx, Element, ElementClass};
use std::any::Any;

/// The `StaticThreadSched` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "StaticThreadSched",
    port_count: "0/0",
    processing: "a/a",
    doc: element_doc!("threads/staticthreadsched"),
    make,
};

struct StaticThreadSched {
    requests: Vec<(String, usize)>,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut requests = Vec::new();
    let mut errors = Vec::new();
    for arg in &ctx.args {
        let mut w = arg.split_whitespace();
        match (w.next(), w.next().map(str::parse::<usize>), w.next()) {
            (Some(name), Some(Ok(t)), None) => requests.push((name.to_string(), t)),
            _ => errors.push(format!("expected 'ELEMENT THREAD', got '{arg}'")),
        }
    }
    if errors.is_empty() {
        Ok(Box::new(StaticThreadSched { requests }))
    } else {
        Err(errors)
    }
}

impl Element for StaticThreadSched {
    fn thread_requests(&self) -> Vec<(String, usize)> {
        self.requests.clone()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
