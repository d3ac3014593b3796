//! Click's configuration-string conventions (Click's `confparse` and `Args`):
//! splitting a configuration string into arguments ([`split_args`]),
//! removing quotes ([`unquote`]), Click's value types ([`ArgValue`] and its
//! implementations) and the [`Args`] reader that elements use to parse
//! positional and `KEYWORD value` arguments.
//!
//! Error messages follow Click's: a value that does not parse gives
//! `LIMIT: expected integer` or a specific message such as `LIMIT: out of
//! range, bound 255`; a missing mandatory argument gives `missing mandatory
//! LENGTH argument`; leftovers give `unknown keyword 'LIMT' (did you mean
//! 'LIMIT'?)` or `too many arguments`.

mod net;
mod num;
mod reader;
mod split;
mod unquote;
mod value;

pub use net::{EtherAddr, Ipv4Prefix, Ipv6Prefix};
pub use num::{Bandwidth, Seconds, Timestamp};
pub use reader::{ArgErrors, Args};
pub use split::split_args;
pub use unquote::{unquote, unquote_str};
pub use value::{ArgValue, ElementName, HandlerName, Raw, Word};
