//! Helpers shared by the element tests: parse a configuration with the full
//! element registry, build a router, run it.
#![allow(dead_code)] // each test binary uses its own subset

use linerate_io::pcap::{LinkType, PcapWriter};
use linerate_lang::{parse_str, Config, ParseOptions};
use linerate_runtime::{Registry, Router, RouterOptions};
use linerate_wire::ipfix;
use std::collections::HashMap;

/// Parse `text` (as `test.click`) against `reg`, panicking on errors.
pub fn config(reg: &Registry, text: &str) -> Config {
    let opts = ParseOptions {
        vars: vec![],
        catalog: reg,
        clickpath: vec![],
    };
    parse_str(text, "test.click", &opts).unwrap_or_else(|e| panic!("parse error: {e}"))
}

/// Build a router from `text` with the full registry; errors as text.
pub fn build(text: &str, opts: RouterOptions) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let c = config(&reg, text);
    Router::build(&c, &reg, opts).map_err(|d| d.to_string())
}

/// Build and run a router to completion.
pub fn run(text: &str, opts: RouterOptions) -> Router {
    let mut r = build(text, opts).unwrap_or_else(|e| panic!("{e}"));
    r.run();
    r
}

/// Write `pkts` (link type `link`) to a pcap file in a fresh temporary
/// directory `name`, run `FromDump(file, STOP true, BURST burst) -> decl`
/// (`decl` declares an element as `e :: CLASS(...)`), each of `e`'s `n`
/// outputs into a `Counter` then `Discard`; the router and the packet
/// count of every output.
pub fn run_outputs(
    link: LinkType,
    pkts: &[Vec<u8>],
    burst: usize,
    decl: &str,
    n: usize,
    name: &str,
) -> (Router, Vec<String>) {
    let d = std::env::temp_dir().join(format!("linerate-out-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let inp = d.join("in.pcap");
    let mut w = PcapWriter::create(&inp, link, 0, false).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write(1_000_000_000 * (i as u64 + 1), p.len() as u32, p)
            .unwrap();
    }
    w.flush().unwrap();
    let e = decl.split("::").next().unwrap_or(decl).trim();
    let mut text = format!(
        "FromDump({}, STOP true, BURST {burst}) -> {decl};\n",
        inp.display()
    );
    for k in 0..n {
        text.push_str(&format!("{e}[{k}] -> c{k} :: Counter -> Discard;\n"));
    }
    let r = run(&text, RouterOptions::default());
    let _ = std::fs::remove_dir_all(&d);
    let counts = (0..n).map(|k| read(&r, &format!("c{k}.count"))).collect();
    (r, counts)
}

/// Read handler `h` (`element.handler`) of `r`, without the final newline.
pub fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.strip_suffix('\n').unwrap_or(&v).to_string()
}

/// Everything decoded from a stream of IPFIX messages.
#[derive(Default, Debug)]
pub struct Ipfix {
    /// (sequence, data records in the message, length) per message.
    pub msgs: Vec<(u32, u32, usize)>,
    pub templates: HashMap<u16, Vec<ipfix::FieldSpec>>,
    pub template_sends: usize,
    /// (template id, record bytes) in order.
    pub data: Vec<(u16, Vec<u8>)>,
}

pub fn decode_ipfix(msgs: &[Vec<u8>]) -> Ipfix {
    let mut out = Ipfix::default();
    for m in msgs {
        let p = ipfix::Packet::new_checked(&m[..]).unwrap();
        let h = ipfix::Repr::parse(&p).unwrap();
        assert_eq!(usize::from(h.length), m.len());
        let mut n = 0;
        for s in p.sets() {
            let s = s.unwrap();
            let mut b = s.payload();
            match s.set_id() {
                2 | 3 => {
                    while b.len() >= 4 {
                        let t = ipfix::TemplateRecord::parse(b, s.set_id() == 3).unwrap();
                        out.templates.insert(t.id(), t.fields().collect());
                        if t.id() == 256 {
                            out.template_sends += 1;
                        }
                        b = &b[t.buffer_len()..];
                    }
                }
                id => {
                    let fields = &out.templates[&id];
                    while !b.is_empty() {
                        let mut len = 0;
                        for f in fields {
                            if f.len == ipfix::VARIABLE_LENGTH {
                                let (l, h) = ipfix::read_varlen(&b[len..]).unwrap();
                                len += l + h;
                            } else {
                                len += usize::from(f.len);
                            }
                        }
                        out.data.push((id, b[..len].to_vec()));
                        b = &b[len..];
                        n += 1;
                    }
                }
            }
        }
        out.msgs.push((h.sequence, n, m.len()));
    }
    out
}

/// The value of field (enterprise, id) in a data record.
pub fn field(ix: &Ipfix, rec: &(u16, Vec<u8>), enterprise: u32, id: u16) -> u64 {
    ipfix::read_uint(field_bytes(ix, rec, enterprise, id)).unwrap()
}

/// The messages of an IPFIX file (RFC 5655): each message's length is in
/// its header.
pub fn ipfix_file_messages(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut msgs = Vec::new();
    let mut b = bytes;
    while !b.is_empty() {
        let n = usize::from(u16::from_be_bytes([b[2], b[3]]));
        msgs.push(b[..n].to_vec());
        b = &b[n..];
    }
    msgs
}

/// The bytes of field (enterprise, id) in a data record of fixed-length
/// fields.
pub fn field_bytes<'a>(ix: &Ipfix, rec: &'a (u16, Vec<u8>), enterprise: u32, id: u16) -> &'a [u8] {
    let mut at = 0;
    for f in &ix.templates[&rec.0] {
        let n = usize::from(f.len);
        if f.enterprise == enterprise && f.id == id {
            return &rec.1[at..at + n];
        }
        at += n;
    }
    panic!("no field {enterprise}/{id} in template {}", rec.0)
}
