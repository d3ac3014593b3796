//! Remote control of a running linerate router.
//!
//! Two servers expose a router's handlers to other programs while it runs:
//!
//! - [`serve_unix`] and [`serve_tcp`] speak Click's `ControlSocket` protocol
//!   (version 1.3), so Click's own tools and scripts can drive linerate: a
//!   greeting line `Click::ControlSocket/1.3`, then line-based commands
//!   (`READ`, `READDATA`, `READUNTIL`, `WRITE`, `WRITEDATA`, `WRITEUNTIL`,
//!   `CHECKREAD`, `CHECKWRITE`, `LLRPC`, `HELP`, `QUIT`) answered with
//!   FTP-style numeric reply lines and, for reads, `DATA n` plus `n` bytes.
//!   [`Client`] and [`client_call`] are the matching client (`linerate ctl`).
//! - [`serve_http`] answers JSON requests for handler values and serves the
//!   counters and gauges in Prometheus' text exposition format at `/metrics`.
//!
//! Handlers are named as in Click: `element.handler`, `N.handler` for the
//! N-th element counted from 1, or a bare name (or `.name`) for the global
//! handlers `version`, `list`, `classes`, `config`, `flatconfig`,
//! `packages`, `requirements`, `handlers` and the write handler `stop`.
//!
//! Every server runs on plain std threads with blocking I/O: one thread
//! accepts, one thread serves each control connection, and two threads answer
//! HTTP requests. Dropping the returned guard stops the server, closes its
//! connections and removes a Unix socket file.
//!
//! # Choice of HTTP server
//! The HTTP side uses `tiny_http`, a small synchronous HTTP/1.1 server
//! (four tiny dependencies, no proc macros), rather than `axum` and `tokio`,
//! which would multiply the build time on the 2-core CI machine for a server
//! that answers a handful of requests a minute. JSON is produced with
//! `serde_json` (built without `serde`'s derive macros).
//!
//! # Choice of metrics encoder
//! `/metrics` is written by hand rather than with the
//! `prometheus-client` crate: that crate's encoder emits OpenMetrics (with its
//! own suffix rules and a trailing `# EOF`) from metric objects registered in
//! advance, whereas linerate's metrics are discovered at every scrape by
//! reading handler values; its derive macros would also pull `syn` into the
//! build. The classic text format (version 0.0.4) is short to write exactly:
//! one `# HELP` and `# TYPE` line per family, every sample of a family
//! together, label values escaped.

#![warn(missing_docs)]

mod client;
mod control;
mod http;
mod socket;

pub use client::{client_call, Client, CtlError, Reply, Target};
pub use control::{read_global, Globals};
pub use http::{serve_http, HttpGuard};
pub use socket::{serve_tcp, serve_unix, ServerGuard, PROTOCOL_VERSION};
