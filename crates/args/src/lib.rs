//! Click's configuration-string conventions (Click's `confparse`): splitting a
//! configuration string into arguments, unquoting, Click's value types and the
//! `Args` reader that elements use to parse positional and `KEYWORD value`
//! arguments.

mod split;

pub use split::split_args;
