//! Exports flow records as IPFIX (RFC 7011) over UDP to a collector and/or
//! to an IPFIX file (RFC 5655).
//!
//! # Synopsis
//! `IPFIXExport([COLLECTOR, KEYWORDS])`
//!
//! # Ports
//! One push input of flow-record packets (what `FlowAggregator` emits, see
//! `flow::record`). An optional push output passes the record packets on
//! unchanged (to `FlowCSV`, say); without it they are freed. Packets that
//! are not flow records are counted (`ignored`) and dropped.
//!
//! # Arguments
//! - `COLLECTOR` (host:port): where to send the UDP datagrams, e.g.
//!   `127.0.0.1:4739`.
//! - `FILENAME` (string): also (or only) write the messages to this file,
//!   an IPFIX file per RFC 5655 (the message stream, templates first).
//! - `MTU` (integer, default 1400): largest message (UDP payload) in bytes,
//!   512 to 65000; records never straddle messages. 0 takes the path MTU
//!   the kernel keeps for the route to COLLECTOR, less the IP and UDP
//!   headers (RFC 7011 section 10.3.3 bounds messages by it): 1472 bytes
//!   over a 1500-byte Ethernet path, 65000 on loopback (64 KiB: the cap),
//!   1400 with no collector (FILENAME only). Fewer, larger datagrams cost
//!   the exporter less (on loopback about 40 times fewer sends), but a
//!   collector's socket buffer holds fewer of them: Linux's default
//!   (212,992 bytes) about 90 datagrams of 1400 bytes, 3 of 65000, so an
//!   unpaced burst of large ones is lost unless the collector enlarges
//!   its buffer. The `mtu` handler says which MTU is used.
//! - `PACE` (integer, default 0): datagrams per second at most (bursts of
//!   up to 8 after a pause); 0 sends as fast as possible. It counts
//!   datagrams, not bytes.
//! - `TEMPLATE_INTERVAL` (time, default 10s): the templates, the RFC 5610
//!   type records and the statistics record are re-sent when the flow clock
//!   (the latest flow end seen: packet time when reading a file) has moved
//!   on by this much.
//! - `TEMPLATE_PACKETS` (integer, default 64): re-send them also after this
//!   many messages (0 = only by time), so a collector that lost them (or
//!   started late) recovers within a bounded number of datagrams even when
//!   the flow clock stands still, as during the final flush.
//! - `FLUSH_INTERVAL` (time, default 1s): a partly filled message is sent
//!   after this much (wall or simulated) time.
//! - `DOMAIN` (integer, default 1): observation domain ID. Exporters with
//!   the same COLLECTOR and FILENAME in one process share one socket, file
//!   and pacer (PACE is the total rate); those with the same DOMAIN too
//!   share its sequence-number space, so the collector sees one stream.
//!   Replica *r* of `--replicate` exports as domain DOMAIN + *r* (see
//!   Implementation).
//! - `ENTERPRISE` (integer, default 32473): private enterprise number of
//!   linerate's own information elements. 32473 is IANA's number for
//!   documentation (RFC 5612); set your organisation's number when you have
//!   one.
//! - `IGNORED` (handler name, e.g. `agg.ignored`): read this handler for
//!   `ignoredPacketTotalCount` (packets the meter could not account for);
//!   the element must run on the exporter's thread.
//! - `IMPL` (`fast` or `reference`, default `fast`): see Implementation.
//!
//! # Templates
//! Four data templates, chosen per record: 256 IPv4, 257 IPv6, 258 IPv4
//! biflow, 259 IPv6 biflow (records with the `biflow` flag, RFC 5103). In
//! order: sourceIPv4Address (8) and destinationIPv4Address (12), or
//! sourceIPv6Address (27) and destinationIPv6Address (28);
//! sourceTransportPort (7), destinationTransportPort (11) (0 for ICMP),
//! protocolIdentifier (4), ipVersion (60), icmpTypeCodeIPv4 (32) or
//! icmpTypeCodeIPv6 (139) (0 unless ICMP), vlanId (58), flowEndReason (136),
//! the enterprise element 5 `icmpEchoIdentifier` (unsigned16: the echo
//! identifier that separates ICMP flows in the key, 0 otherwise);
//! then per direction: octetDeltaCount (1) and packetDeltaCount (2), 8 bytes
//! each; flowStartMilliseconds (152) and flowEndMilliseconds (153) (what
//! nfdump 1.7 decodes); flowStartMicroseconds (154) and flowEndMicroseconds
//! (155) (NTP format, the full precision); minimumIpTotalLength (25),
//! maximumIpTotalLength (26), tcpControlBits (6, 2 bytes per RFC 7125),
//! ipClassOfService (5), minimumTTL (52), maximumTTL (53); and four
//! enterprise elements: 1 `minimumInterArrivalTimeNanoseconds` and 2
//! `maximumInterArrivalTimeNanoseconds` (unsigned64), 3
//! `firstPacketIpTotalLength` and 4 `secondPacketIpTotalLength`
//! (unsigned16). Biflow templates repeat the direction block for the
//! reverse direction with PEN 29305 (for the enterprise elements: the
//! same PEN with bit 14 set, RFC 5103 section 6.1), reverse timestamps
//! included, and end with biflowDirection (239) = 1 (initiator).
//! Template 260 (options, scope exportingProcessId) carries
//! exportedMessageTotalCount, exportedFlowRecordTotalCount,
//! exportedOctetTotalCount, ignoredPacketTotalCount and
//! notSentFlowTotalCount; it is sent with the templates and at the end of
//! the run. Template 261 (options, RFC 5610) announces the enterprise
//! elements: scope privateEnterpriseNumber and informationElementId;
//! informationElementDataType, informationElementSemantics,
//! informationElementUnits, informationElementName.
//!
//! Sequence numbers count data records (flow, statistics and type records)
//! sent before the message, per RFC 7011. The export time is the flow
//! clock's second.
//!
//! # Handlers
//! - `records` (read): flow records exported.
//! - `messages` (read): messages sent.
//! - `bytes` (read): bytes of those messages.
//! - `dropped` (read): datagrams that failed to send.
//! - `ignored` (read): input packets that were not flow records.
//! - `sequence` (read): the next message's sequence number in this
//!   exporter's domain (shared with the other exporters of the domain).
//! - `mtu` (read): the largest message, as MTU set it or the path MTU gave.
//!
//! # Example
//! ```click
//! agg :: FlowAggregator -> IPFIXExport(127.0.0.1:4739, PACE 20000, IGNORED agg.ignored);
//! ```
//!
//! # Implementation
//! Records are packed into a preallocated message buffer; a message leaves
//! when the next record would pass the MTU, after FLUSH_INTERVAL, or at the
//! end of the run (nothing is lost at a stop). The fast encoder writes a
//! record with straight-line stores at fixed offsets (one layout per
//! template); `IMPL reference` walks the template's field list and looks
//! every value up by information element, which is what a generic encoder
//! does. Both give identical bytes (a property test checks it). Pacing
//! sleeps the exporter's thread, so run the exporter on its own thread
//! when pacing live traffic (see `nfs/flowmon.click`). No allocation per
//! record.
//!
//! Replicas: each replica of `--replicate` meters a disjoint share of the
//! flows (FromDump splits by flow hash), so each is an Observation Domain
//! of its own, as RFC 7011 section 2 has a router's line cards: domain
//! DOMAIN + replica index, with its own templates and its own sequence
//! numbers (section 3.1: the sequence number counts the data records "from
//! the current Observation Domain"; section 8: templates are scoped to the
//! Transport Session and the domain), and its own statistics record (the
//! counts are the replica's). All domains send through one socket (one
//! UDP Transport Session; collectors separate the streams by domain, as
//! section 3.1 asks, and nfcapd lists one exporter per domain). A domain's
//! lock is held from stamping a message's sequence number to writing it,
//! so each domain's messages leave and reach the file in sequence order;
//! the pacer and the file take short locks of their own, and the `sendto`
//! (about 20 us on loopback) runs under no lock that another domain needs.
//! Before, the replicas shared one domain and one lock held across every
//! `sendto`: 94 % of the replicated run's futex calls were on it and the
//! replicas took turns at the socket. The other way, sequence numbers
//! reserved under the lock and datagrams sent outside it, keeps one
//! domain but lets messages leave out of sequence order (a collector
//! counts that as loss), and the domain's statistics would still be per
//! replica.

use super::export::{is_icmp, put_be, v4, CommonArgs, MsgBuf, Transport};
use super::record::{pass_on, Direction, FlowRecord};
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, IoCounts,
};
use linerate_wire::ipfix::{
    FieldSpec, Packet as IpfixPacket, Repr, TemplateRepr, HEADER_LEN, OPTIONS_TEMPLATE_SET_ID,
    REVERSE_PEN, TEMPLATE_SET_ID, VARIABLE_LENGTH,
};
use std::any::Any;

/// The `IPFIXExport` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPFIXExport",
    port_count: "1/0-1",
    processing: "h/h",
    doc: element_doc!("flow/ipfixexport"),
    make,
};

/// Template IDs.
pub const T_V4: u16 = 256;
/// IPv6 one-way template.
pub const T_V6: u16 = 257;
/// IPv4 biflow template.
pub const T_V4_BI: u16 = 258;
/// IPv6 biflow template.
pub const T_V6_BI: u16 = 259;
/// Statistics options template.
pub const T_STATS: u16 = 260;
/// RFC 5610 type information options template.
pub const T_TYPES: u16 = 261;
/// Default private enterprise number (RFC 5612's documentation number).
pub const DEFAULT_PEN: u32 = 32473;

/// Seconds between the NTP epoch (1900) and the UNIX epoch.
const NTP_OFFSET: u64 = 2_208_988_800;
/// Bytes of one direction block.
const DIR_LEN: usize = 77;
/// Bytes of the key fields after the addresses.
const COMMON_LEN: usize = 13;

/// linerate's enterprise elements: (id, name, data type, semantics, units).
const OWN_IES: [(u16, &str, u8, u8, u16); 4] = [
    (1, "minimumInterArrivalTimeNanoseconds", 4, 1, 8),
    (2, "maximumInterArrivalTimeNanoseconds", 4, 1, 8),
    (3, "firstPacketIpTotalLength", 2, 1, 2),
    (4, "secondPacketIpTotalLength", 2, 1, 2),
];

/// linerate's enterprise element of the key: the ICMP or ICMPv6 echo
/// identifier that separates ICMP flows (0 for other protocols and other
/// ICMP messages); unsigned16, identifier, no units.
const ICMP_ID_IE: (u16, &str, u8, u8, u16) = (5, "icmpEchoIdentifier", 2, 4, 0);

fn dir_fields(v: &mut Vec<FieldSpec>, reverse: bool, pen: u32) {
    let e = if reverse { REVERSE_PEN } else { 0 };
    for (id, len) in [
        (1, 8),
        (2, 8),
        (152, 8),
        (153, 8),
        (154, 8),
        (155, 8),
        (25, 2),
        (26, 2),
        (6, 2),
        (5, 1),
        (52, 1),
        (53, 1),
    ] {
        v.push(FieldSpec::enterprise(id, len, e));
    }
    for (id, _, ty, _, _) in OWN_IES {
        let len = if ty == 4 { 8 } else { 2 };
        let id = if reverse { id | 0x4000 } else { id };
        v.push(FieldSpec::enterprise(id, len, pen));
    }
}

/// The field list of a data template.
pub fn flow_fields(v6: bool, bi: bool, pen: u32) -> Vec<FieldSpec> {
    let mut v = Vec::new();
    if v6 {
        v.extend([FieldSpec::iana(27, 16), FieldSpec::iana(28, 16)]);
    } else {
        v.extend([FieldSpec::iana(8, 4), FieldSpec::iana(12, 4)]);
    }
    v.extend([
        FieldSpec::iana(7, 2),
        FieldSpec::iana(11, 2),
        FieldSpec::iana(4, 1),
        FieldSpec::iana(60, 1),
        FieldSpec::iana(if v6 { 139 } else { 32 }, 2),
        FieldSpec::iana(58, 2),
        FieldSpec::iana(136, 1),
        FieldSpec::enterprise(ICMP_ID_IE.0, 2, pen),
    ]);
    dir_fields(&mut v, false, pen);
    if bi {
        dir_fields(&mut v, true, pen);
        v.push(FieldSpec::iana(239, 1));
    }
    v
}

const STATS_FIELDS: [FieldSpec; 6] = [
    FieldSpec::iana(144, 4),
    FieldSpec::iana(41, 8),
    FieldSpec::iana(42, 8),
    FieldSpec::iana(40, 8),
    FieldSpec::iana(164, 8),
    FieldSpec::iana(166, 8),
];

const TYPE_FIELDS: [FieldSpec; 6] = [
    FieldSpec::iana(346, 4),
    FieldSpec::iana(303, 2),
    FieldSpec::iana(339, 1),
    FieldSpec::iana(344, 1),
    FieldSpec::iana(345, 2),
    FieldSpec::iana(341, VARIABLE_LENGTH),
];

#[inline]
fn ms(ns: u64) -> u64 {
    ns / 1_000_000
}

/// dateTimeMicroseconds: NTP seconds and fraction, low 11 bits zero.
#[inline]
fn ntp_us(ns: u64) -> u64 {
    let secs = ns / 1_000_000_000 + NTP_OFFSET;
    let us = (ns % 1_000_000_000) / 1000;
    let frac = ((us << 32) / 1_000_000) & !0x7ff;
    secs << 32 | frac
}

/// The value of one field of a record (generic lookup by element).
fn value(r: &FlowRecord, f: &FieldSpec, pen: u32) -> u64 {
    let k = &r.key;
    let icmp = is_icmp(k.proto);
    let dir = |d: &Direction, id: u16| -> u64 {
        match id {
            1 => d.bytes,
            2 => d.packets,
            152 => ms(d.first_ns),
            153 => ms(d.last_ns),
            154 => ntp_us(d.first_ns),
            155 => ntp_us(d.last_ns),
            25 => d.min_len.into(),
            26 => d.max_len.into(),
            6 => d.tcp_flags.into(),
            5 => d.tos.into(),
            52 => d.min_ttl.into(),
            53 => d.max_ttl.into(),
            _ => 0,
        }
    };
    let own = |d: &Direction, id: u16| -> u64 {
        match id {
            1 => d.min_iat_ns,
            2 => d.max_iat_ns,
            3 => d.first_len.into(),
            4 => d.second_len.into(),
            _ => 0,
        }
    };
    match (f.enterprise, f.id) {
        (0, 8) => u32::from_be_bytes(v4(&k.src)).into(),
        (0, 12) => u32::from_be_bytes(v4(&k.dst)).into(),
        (0, 7) if !icmp => k.sport.into(),
        (0, 11) if !icmp => k.dport.into(),
        (0, 7 | 11) => 0,
        (0, 4) => k.proto.into(),
        (0, 60) => k.version.into(),
        (0, 32 | 139) if icmp => k.dport.into(),
        (0, 32 | 139) => 0,
        (0, 58) => r.vlan.into(),
        (0, 136) => r.end_reason.into(),
        (0, 239) => 1,
        (0, id) => dir(&r.fwd, id),
        (REVERSE_PEN, id) => dir(&r.rev, id),
        (e, id) if e == pen && id == ICMP_ID_IE.0 && icmp => k.sport.into(),
        (e, id) if e == pen && id == ICMP_ID_IE.0 => 0,
        (e, id) if e == pen && id & 0x4000 != 0 => own(&r.rev, id & 0x3fff),
        (e, id) if e == pen => own(&r.fwd, id),
        _ => 0,
    }
}

/// Reference encoder: walk the template's fields.
fn encode_reference(r: &FlowRecord, fields: &[FieldSpec], pen: u32, out: &mut [u8]) {
    let mut at = 0;
    for f in fields {
        let n = usize::from(f.len);
        match (f.enterprise, f.id) {
            (0, 27) => out[at..at + 16].copy_from_slice(&r.key.src),
            (0, 28) => out[at..at + 16].copy_from_slice(&r.key.dst),
            _ => put_be(&mut out[at..at + n], value(r, f, pen)),
        }
        at += n;
    }
}

#[inline]
fn write_dir(d: &Direction, o: &mut [u8]) {
    let o: &mut [u8; DIR_LEN] = (&mut o[..DIR_LEN]).try_into().expect("direction block");
    o[0..8].copy_from_slice(&d.bytes.to_be_bytes());
    o[8..16].copy_from_slice(&d.packets.to_be_bytes());
    o[16..24].copy_from_slice(&ms(d.first_ns).to_be_bytes());
    o[24..32].copy_from_slice(&ms(d.last_ns).to_be_bytes());
    o[32..40].copy_from_slice(&ntp_us(d.first_ns).to_be_bytes());
    o[40..48].copy_from_slice(&ntp_us(d.last_ns).to_be_bytes());
    o[48..50].copy_from_slice(&d.min_len.to_be_bytes());
    o[50..52].copy_from_slice(&d.max_len.to_be_bytes());
    o[52..54].copy_from_slice(&u16::from(d.tcp_flags).to_be_bytes());
    o[54] = d.tos;
    o[55] = d.min_ttl;
    o[56] = d.max_ttl;
    o[57..65].copy_from_slice(&d.min_iat_ns.to_be_bytes());
    o[65..73].copy_from_slice(&d.max_iat_ns.to_be_bytes());
    o[73..75].copy_from_slice(&d.first_len.to_be_bytes());
    o[75..77].copy_from_slice(&d.second_len.to_be_bytes());
}

/// Fast encoder: fixed offsets for the four layouts.
fn encode_fast(r: &FlowRecord, bi: bool, out: &mut [u8]) {
    let k = &r.key;
    let a = if k.version == 6 {
        out[0..16].copy_from_slice(&k.src);
        out[16..32].copy_from_slice(&k.dst);
        32
    } else {
        out[0..4].copy_from_slice(&v4(&k.src));
        out[4..8].copy_from_slice(&v4(&k.dst));
        8
    };
    let c = &mut out[a..a + COMMON_LEN];
    let (sp, dp, tc) = if is_icmp(k.proto) {
        (0, 0, k.dport)
    } else {
        (k.sport, k.dport, 0)
    };
    c[0..2].copy_from_slice(&sp.to_be_bytes());
    c[2..4].copy_from_slice(&dp.to_be_bytes());
    c[4] = k.proto;
    c[5] = k.version;
    c[6..8].copy_from_slice(&tc.to_be_bytes());
    c[8..10].copy_from_slice(&r.vlan.to_be_bytes());
    c[10] = r.end_reason;
    let id = if is_icmp(k.proto) { k.sport } else { 0 };
    c[11..13].copy_from_slice(&id.to_be_bytes());
    let d = a + COMMON_LEN;
    write_dir(&r.fwd, &mut out[d..]);
    if bi {
        write_dir(&r.rev, &mut out[d + DIR_LEN..]);
        out[d + 2 * DIR_LEN] = 1;
    }
}

struct Template {
    id: u16,
    fields: Vec<FieldSpec>,
    len: usize,
}

struct IpfixExport {
    tx: Transport,
    msg: MsgBuf,
    templates: Vec<Template>,
    pen: u32,
    domain: u32,
    reference: bool,
    template_ns: u64,
    template_msgs: u64,
    /// Messages sent when the templates were last sent.
    template_at_msg: u64,
    flush_ns: u64,
    ignored_handler: Option<String>,
    ignored_in: u64,
    /// Last value read from the IGNORED handler.
    ignored_meter: u64,
    records: u64,
    not_sent: u64,
    clock_ns: u64,
    next_template_ns: Option<u64>,
    timer: bool,
    /// The end-of-run statistics record was written.
    final_stats: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let common = CommonArgs::read(&mut a, ctx.replica.0);
    let pen: u32 = a.read_or("ENTERPRISE", DEFAULT_PEN);
    let ignored: Option<linerate_args::Raw> = a.read("IGNORED");
    if pen == 0 || pen == REVERSE_PEN {
        a.error("ENTERPRISE: must be neither 0 nor 29305");
    }
    a.complete().map_err(|e| e.0)?;
    let templates = [(T_V4, false, false), (T_V6, true, false)]
        .into_iter()
        .chain([(T_V4_BI, false, true), (T_V6_BI, true, true)])
        .map(|(id, v6, bi)| {
            let fields = flow_fields(v6, bi, pen);
            let len = fields.iter().map(|f| usize::from(f.len)).sum();
            Template { id, fields, len }
        })
        .collect();
    // Until `initialize` opens the channel: MTU, or the default.
    let tx = Transport::new("ipfix", &common);
    let msg = MsgBuf::new(tx.mtu(), HEADER_LEN, false);
    Ok(Box::new(IpfixExport {
        tx,
        msg,
        templates,
        pen,
        domain: common.domain,
        reference: common.reference,
        template_ns: common.template_ns,
        template_msgs: common.template_msgs,
        template_at_msg: 0,
        flush_ns: common.flush_ns,
        ignored_handler: ignored.map(|r| r.0),
        ignored_in: 0,
        ignored_meter: 0,
        records: 0,
        not_sent: 0,
        clock_ns: 0,
        next_template_ns: None,
        timer: false,
        final_stats: false,
    }))
}

impl IpfixExport {
    /// Refresh the IGNORED handler's value (for a statistics record: a
    /// handler call costs about 1,200 instructions, too many for every batch).
    fn read_ignored(&mut self, ctx: &mut Ctx<'_>) {
        if let Some(h) = &self.ignored_handler {
            if let Ok(v) = ctx.call_handler(h, None) {
                self.ignored_meter = v.trim().parse().unwrap_or(self.ignored_meter);
            }
        }
    }

    /// Send the message being built (if it holds anything).
    fn send_message(&mut self) {
        if self.msg.is_empty() {
            return;
        }
        self.msg.finish();
        let length = self.msg.message().len() as u16;
        let export_time = (self.clock_ns / 1_000_000_000) as u32;
        let (domain_id, records) = (self.domain, self.msg.data_records);
        let dropped = self.tx.dropped;
        self.tx.send(self.msg.message(), |b, seq| {
            Repr {
                length,
                export_time,
                sequence: seq as u32,
                domain_id,
            }
            .emit(&mut IpfixPacket::new_unchecked(b))
            .expect("header room reserved");
            u64::from(records)
        });
        if self.tx.dropped != dropped {
            self.not_sent += u64::from(records);
        }
        self.msg.reset();
    }

    /// Room for one record; flushes a full message first.
    fn room(&mut self, set: u16, len: usize, data: bool) -> &mut [u8] {
        if !self.msg.fits(set, len) {
            self.send_message();
        }
        self.msg
            .record(set, len, data)
            .expect("MTU holds any single record")
    }

    fn template_record(&mut self, set: u16, t: &TemplateRepr<'_>) {
        let out = self.room(set, t.buffer_len(), false);
        t.emit(out).expect("sized by buffer_len");
    }

    fn stats_record(&mut self) {
        let v = [
            u64::from(self.domain),
            self.tx.messages,
            self.records,
            self.tx.bytes,
            self.ignored_in.saturating_add(self.ignored_meter),
            self.not_sent,
        ];
        let out = self.room(T_STATS, 44, true);
        let mut at = 0;
        for (f, x) in STATS_FIELDS.iter().zip(v) {
            let n = usize::from(f.len);
            put_be(&mut out[at..at + n], x);
            at += n;
        }
    }

    /// Templates, type records and the statistics record.
    fn send_templates(&mut self, ctx: &mut Ctx<'_>) {
        let templates = std::mem::take(&mut self.templates);
        for t in &templates {
            let repr = TemplateRepr {
                id: t.id,
                scope_count: None,
                fields: &t.fields,
            };
            self.template_record(TEMPLATE_SET_ID, &repr);
        }
        self.templates = templates;
        for (id, fields) in [(T_STATS, &STATS_FIELDS), (T_TYPES, &TYPE_FIELDS)] {
            let repr = TemplateRepr {
                id,
                scope_count: Some(if id == T_STATS { 1 } else { 2 }),
                fields,
            };
            self.template_record(OPTIONS_TEMPLATE_SET_ID, &repr);
        }
        let pen = self.pen;
        for (id, name, ty, sem, units) in OWN_IES.into_iter().chain([ICMP_ID_IE]) {
            let out = self.room(T_TYPES, 11 + name.len(), true);
            out[0..4].copy_from_slice(&pen.to_be_bytes());
            out[4..6].copy_from_slice(&id.to_be_bytes());
            out[6] = ty;
            out[7] = sem;
            out[8..10].copy_from_slice(&units.to_be_bytes());
            out[10] = name.len() as u8;
            out[11..].copy_from_slice(name.as_bytes());
        }
        self.read_ignored(ctx);
        self.stats_record();
    }

    fn export(&mut self, r: &FlowRecord, ctx: &mut Ctx<'_>) {
        self.clock_ns = self.clock_ns.max(r.fwd.last_ns).max(r.rev.last_ns);
        let due_msgs =
            self.template_msgs > 0 && self.tx.messages >= self.template_at_msg + self.template_msgs;
        if due_msgs || self.next_template_ns.is_none_or(|t| self.clock_ns >= t) {
            self.send_templates(ctx);
            // Counted from the message that completes the templates.
            self.template_at_msg = self.tx.messages;
            self.next_template_ns = Some(self.clock_ns.saturating_add(self.template_ns));
        }
        let bi = r.biflow != 0;
        let ti = usize::from(r.key.version == 6) + 2 * usize::from(bi);
        let (id, len) = (self.templates[ti].id, self.templates[ti].len);
        if self.reference {
            let fields = std::mem::take(&mut self.templates[ti].fields);
            let pen = self.pen;
            encode_reference(r, &fields, pen, self.room(id, len, true));
            self.templates[ti].fields = fields;
        } else {
            encode_fast(r, bi, self.room(id, len, true));
        }
        self.records += 1;
    }
}

impl Element for IpfixExport {
    fn calls_handlers(&self) -> bool {
        self.ignored_handler.is_some()
    }

    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        self.tx.open()?;
        self.msg.set_mtu(self.tx.mtu());
        Ok(())
    }

    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let before = self.ignored_in;
        let mut copy = None;
        for p in batch.iter() {
            match FlowRecord::at(p.data(), &mut copy) {
                Some(r) => self.export(r, ctx),
                None => self.ignored_in += 1,
            }
        }
        if !self.msg.is_empty() && !self.timer {
            ctx.schedule_after(self.flush_ns);
            self.timer = true;
        }
        pass_on(batch, self.ignored_in - before, ctx);
    }

    fn run_timer(&mut self, _ctx: &mut Ctx<'_>) {
        self.timer = false;
        self.send_message();
    }

    fn flush(&mut self, ctx: &mut Ctx<'_>) -> bool {
        self.read_ignored(ctx);
        if self.next_template_ns.is_some() && !self.final_stats {
            self.stats_record();
            self.final_stats = true;
        }
        self.send_message();
        false
    }

    super::export::exporter_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_templates() {
        for (v6, bi, len) in [(false, false, 98), (true, false, 122), (false, true, 176)] {
            let f = flow_fields(v6, bi, DEFAULT_PEN);
            let n: usize = f.iter().map(|x| usize::from(x.len)).sum();
            assert_eq!(n, len);
        }
        assert_eq!(
            STATS_FIELDS.iter().map(|f| f.len as usize).sum::<usize>(),
            44
        );
    }

    #[test]
    fn ntp_microseconds_round_trip() {
        let ns = 1_353_690_000_123_456_789u64;
        let v = ntp_us(ns);
        assert_eq!(v >> 32, 1_353_690_000 + NTP_OFFSET);
        assert_eq!(v & 0x7ff, 0);
        let us = ((v & 0xffff_ffff) * 1_000_000 + (1 << 31)) >> 32;
        assert_eq!(us, 123_456);
    }
}
