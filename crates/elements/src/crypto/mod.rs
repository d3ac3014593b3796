//! Crypto elements: AES in counter mode, HMAC-SHA1/SHA256 and AES-CMAC over
//! packet regions, with the batch primitives they are built on
//! ([`primitives`], public for other elements such as the SCION router).

pub mod aescmac;
pub mod aesctr;
pub mod hmacsha1;
pub mod hmacsha256;
mod maccore;
pub mod primitives;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    aescmac::CLASS,
    aesctr::CLASS,
    hmacsha1::CLASS,
    hmacsha256::CLASS,
];
