//! Exports flow records as NetFlow version 9 (RFC 3954) over UDP to a
//! collector and/or to a file of export packets.
//!
//! # Synopsis
//! `NetFlowV9Export([COLLECTOR, KEYWORDS])`
//!
//! # Ports
//! One push input of flow-record packets (see `IPFIXExport`); an optional
//! push output passes them on. Packets that are not flow records are
//! counted (`ignored`) and dropped.
//!
//! # Arguments
//! - `COLLECTOR` (host:port): where to send the datagrams, e.g.
//!   `127.0.0.1:2055`.
//! - `FILENAME` (string): also (or only) write the export packets to this
//!   file, back to back.
//! - `MTU` (integer, default 1400; 0: the path MTU), `PACE` (integer, default 0),
//!   `TEMPLATE_INTERVAL` (time, default 10s), `TEMPLATE_PACKETS` (integer,
//!   default 64), `FLUSH_INTERVAL` (time,
//!   default 1s), `DOMAIN` (integer, default 1: the source ID; exporters
//!   with the same destination in one process share one socket, pacer and
//!   boot time, those with the same DOMAIN too one sequence-number space;
//!   replica *r* of `--replicate` is source ID DOMAIN + *r*), `IMPL`
//!   (`fast` or `reference`): as for `IPFIXExport`.
//!
//! # Templates
//! 256 (IPv4) and 257 (IPv6): IPV4_SRC_ADDR (8) and IPV4_DST_ADDR (12), or
//! IPV6_SRC_ADDR (27) and IPV6_DST_ADDR (28); L4_SRC_PORT (7), L4_DST_PORT
//! (11) (0 for ICMP), PROTOCOL (4), IP_PROTOCOL_VERSION (60), ICMP_TYPE (32,
//! or 139 for ICMPv6; type << 8 | code), SRC_VLAN (58), IN_BYTES (1) and
//! IN_PKTS (2) in 8 bytes, FIRST_SWITCHED (22) and LAST_SWITCHED (21),
//! MIN_PKT_LNGTH (25), MAX_PKT_LNGTH (26), TCP_FLAGS (6, 1 byte), SRC_TOS
//! (5), MIN_TTL (52), MAX_TTL (53). NetFlow v9 has no reverse elements: a
//! biflow record is exported as two one-way records (the reverse one with
//! the key reversed, if it saw packets). Options template 258 (scope
//! System = source ID) carries TOTAL_BYTES_EXP (40), TOTAL_PKTS_EXP (41)
//! and TOTAL_FLOWS_EXP (42): bytes, packets and flow records exported.
//!
//! Times: FIRST_SWITCHED and LAST_SWITCHED are milliseconds of sysUpTime.
//! The exporter's "boot" is set one day before the second of the first
//! record's start, and every header says `unix_secs * 1000 - sysUpTime =
//! boot` exactly, so collectors (nfdump) recover absolute times to the
//! millisecond. The header's time follows the flow clock (the latest flow
//! end: packet time when reading a file). Records that start more than a
//! day before the first exported one are clamped to the boot time. The
//! sequence number counts export packets (RFC 3954); the header's count
//! counts every record in the packet, templates included.
//!
//! # Handlers
//! - `records` (read): flow records exported (a biflow with both
//!   directions counts twice).
//! - `messages` (read): export packets sent.
//! - `bytes` (read): bytes of those packets.
//! - `dropped` (read): datagrams that failed to send.
//! - `ignored` (read): input packets that were not flow records.
//! - `sequence` (read): the next packet's sequence number.
//! - `mtu` (read): the largest export packet, as MTU set it or the path
//!   MTU gave.
//!
//! # Example
//! ```click
//! FlowAggregator -> NetFlowV9Export(127.0.0.1:2055);
//! ```
//!
//! # Implementation
//! As `IPFIXExport`: a preallocated packet buffer, records written with
//! straight-line stores at fixed offsets (`IMPL reference` walks the field
//! list and looks values up by field type; a property test checks that
//! both give the same bytes), FlowSets padded to 4 bytes, no allocation per
//! record.
//!
//! Replicas export as one Source ID each (DOMAIN + replica index), for the
//! reason `IPFIXExport` gives: RFC 3954 section 5.1 counts the sequence
//! number per "Observation Domain" and has collectors separate export
//! streams by source address and Source ID, so each replica, metering its
//! own share of the flows, numbers its own packets and no replica waits for
//! another's `sendto` (nfcapd sees one exporter per Source ID and no
//! sequence gaps). The replicas share the socket, the pacer and the boot
//! time.

use super::export::{is_icmp, put_be, v4, CommonArgs, MsgBuf, Transport};
use super::record::{pass_on, Direction, FlowRecord};
use linerate_runtime::flow::FlowKey;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, IoCounts,
};
use linerate_wire::netflow9::{
    Field, OptionsTemplateRepr, Packet as V9Packet, Repr, TemplateRepr, HEADER_LEN,
    OPTIONS_TEMPLATE_FLOWSET_ID, TEMPLATE_FLOWSET_ID,
};
use std::any::Any;

/// The `NetFlowV9Export` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "NetFlowV9Export",
    port_count: "1/0-1",
    processing: "h/h",
    doc: element_doc!("flow/netflowv9export"),
    make,
};

/// IPv4 template ID.
pub const T_V4: u16 = 256;
/// IPv6 template ID.
pub const T_V6: u16 = 257;
/// Options template ID.
pub const T_STATS: u16 = 258;

/// One day in ms: how far before the first record the boot time lies.
const BOOT_MARGIN_MS: u64 = 86_400_000;

/// The fields of a data template.
pub fn flow_fields(v6: bool) -> Vec<Field> {
    let mut v = if v6 {
        vec![(27, 16), (28, 16)]
    } else {
        vec![(8, 4), (12, 4)]
    };
    v.extend([
        (7, 2),
        (11, 2),
        (4, 1),
        (60, 1),
        (if v6 { 139 } else { 32 }, 2),
        (58, 2),
        (1, 8),
        (2, 8),
        (22, 4),
        (21, 4),
        (25, 2),
        (26, 2),
        (6, 1),
        (5, 1),
        (52, 1),
        (53, 1),
    ]);
    v
}

const STATS_SCOPE: [Field; 1] = [(1, 4)];
const STATS_OPTIONS: [Field; 3] = [(40, 8), (41, 8), (42, 8)];

/// One direction of a record as a one-way flow.
struct OneWay<'a> {
    key: FlowKey,
    vlan: u16,
    d: &'a Direction,
}

fn value(f: &OneWay<'_>, ty: u16, boot_ms: u64) -> u64 {
    let k = &f.key;
    let icmp = is_icmp(k.proto);
    let up = |ns: u64| (ns / 1_000_000).saturating_sub(boot_ms) as u32 as u64;
    match ty {
        8 => u32::from_be_bytes(v4(&k.src)).into(),
        12 => u32::from_be_bytes(v4(&k.dst)).into(),
        7 if !icmp => k.sport.into(),
        11 if !icmp => k.dport.into(),
        32 | 139 if icmp => k.dport.into(),
        7 | 11 | 32 | 139 => 0,
        4 => k.proto.into(),
        60 => k.version.into(),
        58 => f.vlan.into(),
        1 => f.d.bytes,
        2 => f.d.packets,
        22 => up(f.d.first_ns),
        21 => up(f.d.last_ns),
        25 => f.d.min_len.into(),
        26 => f.d.max_len.into(),
        6 => f.d.tcp_flags.into(),
        5 => f.d.tos.into(),
        52 => f.d.min_ttl.into(),
        53 => f.d.max_ttl.into(),
        _ => 0,
    }
}

fn encode_reference(f: &OneWay<'_>, fields: &[Field], boot_ms: u64, out: &mut [u8]) {
    let mut at = 0;
    for &(ty, len) in fields {
        let n = usize::from(len);
        match ty {
            27 => out[at..at + 16].copy_from_slice(&f.key.src),
            28 => out[at..at + 16].copy_from_slice(&f.key.dst),
            _ => put_be(&mut out[at..at + n], value(f, ty, boot_ms)),
        }
        at += n;
    }
}

fn encode_fast(f: &OneWay<'_>, boot_ms: u64, out: &mut [u8]) {
    let k = &f.key;
    let a = if k.version == 6 {
        out[0..16].copy_from_slice(&k.src);
        out[16..32].copy_from_slice(&k.dst);
        32
    } else {
        out[0..4].copy_from_slice(&v4(&k.src));
        out[4..8].copy_from_slice(&v4(&k.dst));
        8
    };
    let o: &mut [u8; 42] = (&mut out[a..a + 42]).try_into().expect("record layout");
    let (sp, dp, tc) = if is_icmp(k.proto) {
        (0, 0, k.dport)
    } else {
        (k.sport, k.dport, 0)
    };
    let up = |ns: u64| (ns / 1_000_000).saturating_sub(boot_ms) as u32;
    let d = f.d;
    o[0..2].copy_from_slice(&sp.to_be_bytes());
    o[2..4].copy_from_slice(&dp.to_be_bytes());
    o[4] = k.proto;
    o[5] = k.version;
    o[6..8].copy_from_slice(&tc.to_be_bytes());
    o[8..10].copy_from_slice(&f.vlan.to_be_bytes());
    o[10..18].copy_from_slice(&d.bytes.to_be_bytes());
    o[18..26].copy_from_slice(&d.packets.to_be_bytes());
    o[26..30].copy_from_slice(&up(d.first_ns).to_be_bytes());
    o[30..34].copy_from_slice(&up(d.last_ns).to_be_bytes());
    o[34..36].copy_from_slice(&d.min_len.to_be_bytes());
    o[36..38].copy_from_slice(&d.max_len.to_be_bytes());
    o[38] = d.tcp_flags;
    o[39] = d.tos;
    o[40] = d.min_ttl;
    o[41] = d.max_ttl;
}

struct V9Export {
    tx: Transport,
    msg: MsgBuf,
    fields: [Vec<Field>; 2],
    lens: [usize; 2],
    domain: u32,
    reference: bool,
    template_ns: u64,
    template_msgs: u64,
    /// Messages sent when the templates were last sent.
    template_at_msg: u64,
    flush_ns: u64,
    ignored_in: u64,
    records: u64,
    packets: u64,
    octets: u64,
    clock_ns: u64,
    boot_ms: Option<u64>,
    next_template_ns: Option<u64>,
    timer: bool,
    /// The end-of-run statistics record was written.
    final_stats: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let common = CommonArgs::read(&mut a, ctx.replica.0);
    a.complete().map_err(|e| e.0)?;
    let fields = [flow_fields(false), flow_fields(true)];
    let lens = [0, 1].map(|i| fields[i].iter().map(|f| usize::from(f.1)).sum());
    // Until `initialize` opens the channel: MTU, or the default.
    let tx = Transport::new("v9", &common);
    let msg = MsgBuf::new(tx.mtu(), HEADER_LEN, true);
    Ok(Box::new(V9Export {
        tx,
        msg,
        fields,
        lens,
        domain: common.domain,
        reference: common.reference,
        template_ns: common.template_ns,
        template_msgs: common.template_msgs,
        template_at_msg: 0,
        flush_ns: common.flush_ns,
        ignored_in: 0,
        records: 0,
        packets: 0,
        octets: 0,
        clock_ns: 0,
        boot_ms: None,
        next_template_ns: None,
        timer: false,
        final_stats: false,
    }))
}

impl V9Export {
    fn send_message(&mut self) {
        if self.msg.is_empty() {
            return;
        }
        self.msg.finish();
        let boot = self.boot_ms.unwrap_or(0);
        let secs = (self.clock_ns / 1_000_000_000).max(boot.div_ceil(1000));
        let (count, source_id) = (self.msg.all_records as u16, self.domain);
        self.tx.send(self.msg.message(), |b, seq| {
            Repr {
                count,
                sys_uptime: (secs * 1000 - boot) as u32,
                unix_secs: secs as u32,
                sequence: seq as u32,
                source_id,
            }
            .emit(&mut V9Packet::new_unchecked(b))
            .expect("header room reserved");
            1
        });
        self.msg.reset();
    }

    fn room(&mut self, set: u16, len: usize, data: bool) -> &mut [u8] {
        if !self.msg.fits(set, len) {
            self.send_message();
        }
        self.msg
            .record(set, len, data)
            .expect("MTU holds any single record")
    }

    fn stats_record(&mut self) {
        let v = [
            u64::from(self.domain),
            self.octets,
            self.packets,
            self.records,
        ];
        let out = self.room(T_STATS, 28, true);
        put_be(&mut out[0..4], v[0]);
        put_be(&mut out[4..12], v[1]);
        put_be(&mut out[12..20], v[2]);
        put_be(&mut out[20..28], v[3]);
    }

    fn send_templates(&mut self) {
        let fields = std::mem::take(&mut self.fields);
        for (id, f) in [(T_V4, &fields[0]), (T_V6, &fields[1])] {
            let t = TemplateRepr { id, fields: f };
            let out = self.room(TEMPLATE_FLOWSET_ID, t.buffer_len(), false);
            t.emit(out).expect("sized by buffer_len");
        }
        self.fields = fields;
        let o = OptionsTemplateRepr {
            id: T_STATS,
            scopes: &STATS_SCOPE,
            options: &STATS_OPTIONS,
        };
        let out = self.room(OPTIONS_TEMPLATE_FLOWSET_ID, o.buffer_len(), false);
        o.emit(out).expect("sized by buffer_len");
        self.stats_record();
    }

    fn one(&mut self, f: &OneWay<'_>) {
        let boot = self.boot_ms.unwrap_or(0);
        let i = usize::from(f.key.version == 6);
        let (id, len) = ([T_V4, T_V6][i], self.lens[i]);
        if self.reference {
            let fields = std::mem::take(&mut self.fields[i]);
            encode_reference(f, &fields, boot, self.room(id, len, true));
            self.fields[i] = fields;
        } else {
            encode_fast(f, boot, self.room(id, len, true));
        }
        self.records += 1;
        // Saturating: records from a misconfigured graph are untrusted.
        self.packets = self.packets.saturating_add(f.d.packets);
        self.octets = self.octets.saturating_add(f.d.bytes);
    }

    fn export(&mut self, r: &FlowRecord) {
        self.clock_ns = self.clock_ns.max(r.fwd.last_ns).max(r.rev.last_ns);
        if self.boot_ms.is_none() {
            let first = r.fwd.first_ns / 1_000_000;
            let proposal = (first / 1000 * 1000).saturating_sub(BOOT_MARGIN_MS);
            self.boot_ms = Some(self.tx.boot_ms(proposal));
        }
        let due_msgs =
            self.template_msgs > 0 && self.tx.messages >= self.template_at_msg + self.template_msgs;
        if due_msgs || self.next_template_ns.is_none_or(|t| self.clock_ns >= t) {
            self.send_templates();
            // Counted from the message that completes the templates.
            self.template_at_msg = self.tx.messages;
            self.next_template_ns = Some(self.clock_ns.saturating_add(self.template_ns));
        }
        self.one(&OneWay {
            key: r.key,
            vlan: r.vlan,
            d: &r.fwd,
        });
        if r.biflow != 0 && r.rev.packets > 0 {
            self.one(&OneWay {
                key: r.key.reversed(),
                vlan: r.vlan,
                d: &r.rev,
            });
        }
    }
}

impl Element for V9Export {
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
                Some(r) => self.export(r),
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

    fn flush(&mut self, _ctx: &mut Ctx<'_>) -> bool {
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
    fn record_lengths() {
        let l4: usize = flow_fields(false).iter().map(|f| usize::from(f.1)).sum();
        let l6: usize = flow_fields(true).iter().map(|f| usize::from(f.1)).sum();
        assert_eq!((l4, l6), (50, 74));
    }
}
