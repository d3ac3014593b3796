//! Cases for the crypto elements: AESCTR and the HMACs touch every byte
//! (64 and 1500 bytes, Gbps), AESCMAC MACs one block per packet (SCION's
//! hop-field MAC, Mpps).

use super::{traffic, Case, Goal};
use std::path::Path;

const KEY128: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const KEY256: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
const KEY160: &str = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b";

fn per_byte(element: &'static str, config: String, what: &str, goal: Option<Goal>) -> Case {
    let reference = Some(config.replace(')', ", IMPL reference)"));
    Case {
        element,
        config,
        what: what.into(),
        reference,
        prelude: String::new(),
        outputs: 1,
        sizes: vec![64, 1500],
        frames: Box::new(|s| traffic::udp4(1024, s)),
        per_byte: true,
        scale: 0.2,
        goal,
    }
}

pub fn cases(_dir: &Path) -> Vec<Case> {
    let mut cmac = Case::header(
        "AESCMAC",
        format!("AESCMAC(KEY {KEY128}, OFFSET 14, LENGTH 16, MAC_OFFSET 34, MACLEN 6)"),
        "AES-128, one block, 6-byte MAC written",
        |s| traffic::udp4(1024, s),
    );
    cmac.reference = Some(cmac.config.replace(')', ", IMPL reference)"));
    cmac.goal = Some(Goal::Mpps(60.0));
    // SCION's router verifies: frames carry the right MAC, nothing is
    // written (no copy of MemoryReplay's zero-copy views).
    let mut verify = Case::header(
        "AESCMAC",
        format!(
            "AESCMAC(KEY {KEY128}, OFFSET 14, LENGTH 16, MODE verify, MAC_OFFSET 34, MACLEN 6)"
        ),
        "AES-128, one block, 6-byte MAC verified",
        |s| {
            let key = linerate_elements::crypto::primitives::parse_hex(KEY128).unwrap_or_default();
            let c = linerate_elements::crypto::primitives::Cmac128::new(&key);
            let mut frames = traffic::udp4(1024, s);
            if let Ok(c) = c {
                for f in &mut frames {
                    let mac = c.mac(&f[14..30]);
                    f[34..40].copy_from_slice(&mac[..6]);
                }
            }
            frames
        },
    );
    verify.reference = Some(verify.config.replace(')', ", IMPL reference)"));
    verify.outputs = 2;
    verify.goal = Some(Goal::Mpps(60.0));
    vec![
        per_byte(
            "AESCTR",
            format!("AESCTR(KEY {KEY256}, NONCE 0011223344556677, OFFSET 42)"),
            "AES-256, UDP payload, nonce+PN",
            Some(Goal::Gbps(40.0)),
        ),
        per_byte(
            "AESCTR",
            format!("AESCTR(KEY {KEY128}, IV_OFFSET 42, OFFSET 58)"),
            "AES-128, IV in packet",
            None,
        ),
        per_byte(
            "HMACSHA1",
            format!("HMACSHA1(KEY {KEY160}, OFFSET 14, MACLEN 12)"),
            "after Ethernet, 96-bit MAC appended",
            Some(Goal::Gbps(20.0)),
        ),
        per_byte(
            "HMACSHA256",
            format!("HMACSHA256(KEY {KEY160}, OFFSET 14, MACLEN 16)"),
            "after Ethernet, 128-bit MAC appended",
            None,
        ),
        cmac,
        verify,
    ]
}
