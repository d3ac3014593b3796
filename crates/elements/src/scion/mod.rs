//! SCION border-router elements (scionproto v0.15.1 data plane).
//!
//! `SCIONRouter` runs the whole pipeline of `specs/scion-dataplane.md`
//! §9 in one element (one parse per frame, batched AES); the step elements
//! (`SCIONParse` ... `SCIONSCMPError`, sharing a `SCIONConfig`) run the
//! same step functions one or a few per element (`docs/scion.md`). [`core`]
//! holds the pipeline, [`mac`] the hop-field MAC and key derivation, and
//! [`topology`] the reference router's configuration files; [`fuse`]
//! replaces a complete step graph with one `SCIONRouter`.

pub mod core;
pub mod fastpath;
pub mod fuse;
pub mod mac;
pub mod scionadvancepath;
pub mod scioncheckegress;
pub mod scioncheckhop;
pub mod scionconfig;
pub mod sciondeliver;
pub mod scionegress;
pub mod scionlinks;
pub mod sciononehop;
pub mod scionparse;
pub mod scionroute;
pub mod scionrouter;
pub mod scionscmperror;
pub mod scionverifyhop;
mod steps;
pub mod topology;

use linerate_runtime::ElementClass;

/// The element classes of this category.
pub const CLASSES: &[ElementClass] = &[
    scionrouter::CLASS,
    scionlinks::CLASS,
    scionconfig::CLASS,
    scionparse::CLASS,
    scioncheckhop::CLASS,
    scionverifyhop::CLASS,
    scionroute::CLASS,
    scioncheckegress::CLASS,
    scionadvancepath::CLASS,
    scionegress::CLASS,
    sciondeliver::CLASS,
    sciononehop::CLASS,
    scionscmperror::CLASS,
];
