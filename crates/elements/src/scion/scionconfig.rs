//! The configuration of a SCION border router built from step elements:
//! loads the reference router's files once, owns the data-plane clock and
//! every counter, and answers the handlers (those of `SCIONRouter`).
//!
//! # Synopsis
//! `SCIONConfig(CONFIG [, KEYWORDS])`
//!
//! # Ports
//! None. The step elements (`SCIONParse`, `SCIONCheckHop`,
//! `SCIONVerifyHop`, `SCIONRoute`, `SCIONCheckEgress`, `SCIONAdvancePath`,
//! `SCIONEgress`, `SCIONDeliver`, `SCIONOneHop`, `SCIONSCMPError`) name
//! this element as their first argument, as Click's elements name an
//! `AddressInfo`.
//!
//! # Arguments
//! - `CONFIG` (string, mandatory): the reference router's configuration
//!   folder with `topology.json` and `keys/master0.key`.
//! - `ID` (string, default: the first border router in name order): this
//!   router's name in `topology.json`'s `border_routers`.
//! - `NOW` (timestamp or `system`, default `system`): fixes the
//!   data-plane clock (Unix seconds) for replaying captures; with `system`,
//!   `SCIONParse` reads the system clock once per batch.
//!
//! # Handlers
//! The same as `SCIONRouter`'s, counted by the steps: `now` (read/write),
//! `interfaces`, `drops_<reason>`, `scmp_<code>`, `scmp_unreachable`,
//! `slow_path`, `ifN_in_packets`, `ifN_in_bytes`, `ifN_out_packets`,
//! `ifN_out_bytes` and `internal_*`.
//!
//! # Example
//! ```click
//! br :: SCIONConfig(CONFIG topo, NOW 1700000000);
//! FromDump(in.pcap, STOP true) -> p :: SCIONParse(br) -> Discard;
//! ```
//!
//! # Implementation
//! The data plane (`core.rs`'s `Dataplane`: interface table, forwarding key
//! with precomputed CMAC subkeys, counters) sits behind an `Arc<Mutex<_>>`
//! that each step locks once per batch (uncontended: one replica's steps
//! run on one thread). Steps find it by name when they are initialized;
//! replicas each have their own. See `docs/scion.md` for the pipeline.
//!
//! `linerate run` replaces a complete step graph around a `SCIONConfig`
//! (all ten steps, wired as in `nfs/scion-br.click`) with one `SCIONRouter`
//! of the same name and configuration, which runs the same step functions
//! about six times faster with the same frames and handlers; `--no-fuse`
//! keeps the steps (`linerate_elements::scion::fuse`).

use super::core::Dataplane;
use super::scionrouter::{drops, handler_specs, read_config, read_handler, write_handler};
use super::steps::{self, Config, Shared};
use linerate_runtime::time::system_now_ns;
use linerate_runtime::{ConfigureCtx, Element, ElementClass, HandlerSpec};
use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `SCIONConfig` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SCIONConfig",
    port_count: "0/0",
    processing: "a/a",
    doc: element_doc!("scion/scionconfig"),
    make,
};

struct SCIONConfig {
    shared: Config,
    handlers: &'static [HandlerSpec],
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let (topo, now) = read_config(&mut a)?;
    a.complete().map_err(|e| e.0)?;
    let dp = Dataplane::new(&topo, now.unwrap_or_else(system_now_ns)).map_err(|e| vec![e])?;
    let handlers = handler_specs(&dp);
    let shared = Arc::new(Mutex::new(Shared {
        dp,
        fixed_now: now.is_some(),
    }));
    steps::register(ctx.name, ctx.replica.0, &shared);
    Ok(Box::new(SCIONConfig { shared, handlers }))
}

impl SCIONConfig {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Element for SCIONConfig {
    fn handlers(&self) -> &[HandlerSpec] {
        self.handlers
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        read_handler(&self.lock().dp, name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let mut g = self.lock();
        let sh = &mut *g;
        write_handler(&mut sh.dp, &mut sh.fixed_now, name, value)
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        drops(&self.lock().dp)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
