//! linerate's runtime: packets, batches, elements, the router graph, the
//! per-thread scheduler and handlers.
#![warn(missing_docs)]

pub mod anno;
pub mod batch;
pub mod packet;

pub use anno::Anno;
pub use batch::{Batch, DEFAULT_BURST, MAX_BATCH};
pub use packet::{Packet, HEADROOM};
pub mod element;
pub mod flow;
pub mod mem;
pub mod ports;
pub mod registry;
pub mod ring;
pub mod router;
pub mod sched;
pub mod time;

pub use element::{ConfigureCtx, Element, ElementClass, HandlerSpec, IoCounts};
pub use ports::Processing;
pub use registry::Registry;
pub use router::{Router, RouterHandle, RouterOptions, RunReport};
pub use sched::{Ctx, InitCtx};
