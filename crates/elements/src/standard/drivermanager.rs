//! A Script that manages driver stop events.
//!
//! # Synopsis
//! `DriverManager(INSTRUCTIONS...)`
//!
//! # Ports
//! None.
//!
//! # Arguments
//! The instructions of a Script (see Script); DriverManager is a Script
//! whose default `TYPE` is `DRIVER`.
//!
//! While a DriverManager exists, a driver stop request from an element
//! (`STOP true` sources, a Script's `stop`, the global `stop` handler) does
//! not stop the router: it steps the DriverManager's script instead (it
//! passes one `pause`/`wait_stop`, or cuts a `wait` short). The router stops
//! when the script runs its `stop` instruction or ends (an implicit `stop`
//! follows the last instruction). An empty DriverManager waits for one stop
//! request, which gives the default behaviour.
//!
//! # Handlers
//! Those of Script: `step`, `goto`, `run`, and the expression helpers.
//!
//! # Example
//! ```click
//! InfiniteSource(LIMIT 10, STOP true) -> c :: Counter -> Discard;
//! DriverManager(wait_stop, read c.count, wait 10ms, stop);
//! ```
//!
//! # Implementation
//! The runtime counts stop requests while a driver script exists
//! (`Ctx::stop_requests`); the DriverManager's task turns each new request
//! into one step of its script, and its `stop` stops the router with
//! `Ctx::stop_driver`. The other Script notes apply.

use super::script::{make_script, Kind};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `DriverManager` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "DriverManager",
    port_count: "0/0",
    processing: "a/a",
    doc: element_doc!("standard/drivermanager"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    make_script(ctx, "DriverManager", Kind::Driver)
}
