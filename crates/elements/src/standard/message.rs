//! Prints a message, warning or error when the configuration is loaded.
//!
//! # Synopsis
//! `Message(MESSAGE [, TYPE])`
//!
//! # Ports
//! None.
//!
//! # Arguments
//! - `MESSAGE` (string, mandatory): the text.
//! - `TYPE` (keyword, default `MESSAGE`): `MESSAGE` prints the text on
//!   standard error, `WARNING` prints it as `warning: MESSAGE`, and `ERROR`
//!   reports it as a configuration error, so the router fails to start.
//!
//! # Handlers
//! None.
//!
//! # Example
//! ```click
//! Message("This configuration is deprecated; use test-tun.click instead.", WARNING)
//! ```
//!
//! # Implementation
//! The message is printed while the element is configured (once, also in
//! replicated mode); the element does nothing afterwards.

use linerate_runtime::{ConfigureCtx, Element, ElementClass};
use std::any::Any;

/// The `Message` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Message",
    port_count: "0/0",
    processing: "a/a",
    doc: element_doc!("standard/message"),
    make,
};

struct Message;

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let message: Option<String> = a.read_mp("MESSAGE");
    let ty: Option<linerate_args::Word> = a.read_p("TYPE");
    a.complete().map_err(|e| e.0)?;
    let message = message.unwrap_or_default();
    let ty = ty.map(|w| w.0).unwrap_or_else(|| "MESSAGE".to_string());
    let first = ctx.replica.0 == 0;
    match ty.as_str() {
        "MESSAGE" if first => eprintln!("{message}"),
        "WARNING" if first => eprintln!("warning: {message}"),
        "MESSAGE" | "WARNING" => {}
        "ERROR" => return Err(vec![message]),
        _ => return Err(vec!["unrecognized message type".to_string()]),
    }
    Ok(Box::new(Message))
}

impl Element for Message {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
