//! SCION border-router elements (scionproto v0.15.1 data plane).
//!
//! `SCIONRouter` runs the whole pipeline of `specs/scion-dataplane.md`
//! §9 in one element (one parse per frame, batched AES); [`core`] holds
//! the pipeline, [`mac`] the hop-field MAC and key derivation, and
//! [`topology`] the reference router's configuration files.

pub mod core;
pub mod fastpath;
pub mod mac;
pub mod scionlinks;
pub mod scionrouter;
pub mod topology;

use linerate_runtime::ElementClass;

/// The element classes of this category.
pub const CLASSES: &[ElementClass] = &[scionrouter::CLASS, scionlinks::CLASS];
