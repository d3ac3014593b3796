//! Click's IP elements: header checks, TTL and checksum updates, IPPrint,
//! encapsulation, ICMP errors, fragmentation and reassembly.

pub mod checkicmpheader;
pub mod checkipheader;
pub mod checkipheader2;
pub mod checktcpheader;
pub mod checkudpheader;
pub mod decipttl;
pub mod icmperror;
pub mod icmppingencap;
pub mod ipencap;
pub mod ipfragmenter;
pub mod ipprint;
pub mod ipreassembler;
pub mod markipheader;
pub mod setipaddress;
pub mod setipchecksum;
pub mod setipdscp;
pub mod settcpchecksum;
pub mod setudpchecksum;
pub mod storeipaddress;
pub mod udpipencap;
pub(crate) mod util;

use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    checkicmpheader::CLASS,
    checkipheader::CLASS,
    checkipheader2::CLASS,
    checktcpheader::CLASS,
    checkudpheader::CLASS,
    decipttl::CLASS,
    icmperror::CLASS,
    icmppingencap::CLASS,
    ipencap::CLASS,
    ipfragmenter::CLASS,
    ipprint::CLASS,
    ipreassembler::CLASS,
    markipheader::CLASS,
    setipaddress::CLASS,
    setipchecksum::CLASS,
    setipdscp::CLASS,
    settcpchecksum::CLASS,
    setudpchecksum::CLASS,
    storeipaddress::CLASS,
    udpipencap::CLASS,
];
