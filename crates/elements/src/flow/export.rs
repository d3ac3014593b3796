//! What `IPFIXExport` and `NetFlowV9Export` share: the message buffer that
//! packs records into sets under the MTU, the transport (a UDP socket to
//! the collector and/or a file) with pacing, and the common arguments.

use linerate_runtime::HandlerSpec;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Smallest accepted MTU (payload bytes of a datagram).
pub(crate) const MIN_MTU: usize = 512;
/// Largest accepted MTU: an IPFIX message's length is 16 bits, and an IPv4
/// UDP payload at most 65,507 bytes.
pub(crate) const MAX_MTU: usize = 65_000;
/// The default MTU, and the MTU of `MTU 0` where the kernel gives no path
/// MTU (no collector: file only).
const DEFAULT_MTU: usize = 1400;

/// The arguments both exporters take.
pub(crate) struct CommonArgs {
    pub collector: Option<String>,
    pub filename: Option<String>,
    /// `MTU`; `None` (`MTU 0`): the collector's path MTU (see
    /// [`Transport::mtu`]).
    pub mtu: Option<usize>,
    pub pace: u32,
    pub template_ns: u64,
    pub template_msgs: u64,
    pub flush_ns: u64,
    pub domain: u32,
    pub reference: bool,
}

impl CommonArgs {
    /// Read COLLECTOR, FILENAME, MTU, PACE, TEMPLATE_INTERVAL, TEMPLATE_PACKETS,
    /// FLUSH_INTERVAL, DOMAIN and IMPL from `a`; the caller completes `a`.
    /// Replica `replica` of a replicated configuration exports as domain
    /// DOMAIN + `replica`: each replica meters its own share of the flows,
    /// so it is an observation domain of its own (RFC 7011 section 2, as a
    /// line card is) with its own sequence numbers and templates.
    pub fn read(a: &mut linerate_args::Args, replica: usize) -> CommonArgs {
        let collector: Option<String> = a.read_p("COLLECTOR");
        let filename: Option<String> = a.read("FILENAME");
        let mtu: u32 = a.read_or("MTU", DEFAULT_MTU as u32);
        let pace: u32 = a.read_or("PACE", 0);
        let template: linerate_args::Seconds = a.read_or(
            "TEMPLATE_INTERVAL",
            linerate_args::Seconds {
                nanos: 10_000_000_000,
            },
        );
        let template_msgs: u32 = a.read_or("TEMPLATE_PACKETS", 64);
        let flush: linerate_args::Seconds = a.read_or(
            "FLUSH_INTERVAL",
            linerate_args::Seconds {
                nanos: 1_000_000_000,
            },
        );
        let domain: u32 = a.read_or("DOMAIN", 1);
        let imp: linerate_args::Word = a.read_or("IMPL", linerate_args::Word("fast".into()));
        if !matches!(imp.0.as_str(), "fast" | "reference") {
            a.error(format!(
                "IMPL: expected 'fast' or 'reference', not '{}'",
                imp.0
            ));
        }
        if collector.is_none() && filename.is_none() {
            a.error("give COLLECTOR or FILENAME (or both)");
        }
        if mtu != 0 && !(MIN_MTU..=MAX_MTU).contains(&(mtu as usize)) {
            a.error(format!(
                "MTU: must be 0 (the path MTU) or between {MIN_MTU} and {MAX_MTU}"
            ));
        }
        CommonArgs {
            collector,
            filename,
            mtu: (mtu != 0).then_some(mtu as usize),
            pace,
            template_ns: template.nanos.max(1),
            template_msgs: u64::from(template_msgs),
            flush_ns: flush.nanos.max(1),
            domain: domain.wrapping_add(replica as u32),
            reference: imp.0 == "reference",
        }
    }
}

/// What one exporting process shares for a (protocol, collector, file):
/// the socket, the file, the pacer, the NetFlow v9 boot time, and one
/// sequence-number space per observation domain. Exporter elements with
/// the same destination use one channel; those with the same DOMAIN too
/// share that domain's sequence numbers, so the collector sees one stream
/// per domain. Replicas have a domain each (see `CommonArgs::read`).
struct Channel {
    sock: Option<(UdpSocket, SocketAddr)>,
    /// The largest UDP payload the route to the collector carries without
    /// fragments (its path MTU less the IP and UDP headers), where the
    /// kernel says.
    path_payload: Option<usize>,
    /// The pacer's next free slot.
    next: Mutex<Option<Instant>>,
    /// The file (RFC 5655 for IPFIX), written a whole message at a time.
    file: Option<Mutex<FileOut>>,
    boot_ms: OnceLock<u64>,
    /// Each domain's next sequence number. A domain's lock is held from
    /// stamping a message to writing it, so its messages leave (and reach
    /// the file) in sequence order; domains do not wait for each other.
    domains: Mutex<Vec<(u32, Arc<Mutex<u64>>)>>,
}

struct FileOut {
    w: BufWriter<File>,
    errors: u64,
}

/// (protocol, collector, file).
type ChannelKey = (&'static str, Option<String>, Option<String>);

/// Live channels; an entry dies with the last exporter using it.
static CHANNELS: Mutex<Vec<(ChannelKey, Weak<Channel>)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Channel {
    /// The sequence-number space of `domain`, created on first use.
    fn domain(&self, domain: u32) -> Arc<Mutex<u64>> {
        let mut all = lock(&self.domains);
        if let Some((_, s)) = all.iter().find(|(d, _)| *d == domain) {
            return s.clone();
        }
        let s = Arc::new(Mutex::new(0));
        all.push((domain, s.clone()));
        s
    }

    /// Reserve the next send slot `gap` apart from the last (bursts of
    /// PACE_BURST after a pause); how long to wait for it.
    fn pace(&self, gap: Duration) -> Option<Duration> {
        let now = Instant::now();
        let floor = now.checked_sub(gap * PACE_BURST).unwrap_or(now);
        let mut next = lock(&self.next);
        let slot = next.map_or(floor, |n| n.max(floor));
        *next = Some(slot + gap);
        (slot > now).then(|| slot - now)
    }
}

/// Where messages go, with counters and pacing.
pub(crate) struct Transport {
    key: ChannelKey,
    domain: u32,
    /// `MTU`, unless 0.
    mtu_arg: Option<usize>,
    chan: Option<Arc<Channel>>,
    /// This element's domain's sequence number (in `chan`).
    seq: Arc<Mutex<u64>>,
    gap: Option<Duration>,
    /// Messages sent (UDP) or written (file only) by this element.
    pub messages: u64,
    /// Bytes of those messages.
    pub bytes: u64,
    /// Datagrams that failed to send.
    pub dropped: u64,
}

/// Bursts the pacer allows after an idle period, in datagrams.
const PACE_BURST: u32 = 8;

impl Transport {
    pub fn new(protocol: &'static str, args: &CommonArgs) -> Transport {
        Transport {
            key: (protocol, args.collector.clone(), args.filename.clone()),
            domain: args.domain,
            mtu_arg: args.mtu,
            chan: None,
            seq: Arc::new(Mutex::new(0)),
            gap: (args.pace > 0)
                .then(|| Duration::from_nanos(1_000_000_000 / u64::from(args.pace))),
            messages: 0,
            bytes: 0,
            dropped: 0,
        }
    }

    /// Join the live channel for this destination, or open one: resolve
    /// the collector, bind a socket, create the file; then join the
    /// domain's sequence-number space.
    pub fn open(&mut self) -> Result<(), String> {
        let mut all = lock(&CHANNELS);
        all.retain(|(_, w)| w.strong_count() > 0);
        let found = all
            .iter()
            .find(|(k, _)| *k == self.key)
            .and_then(|(_, w)| w.upgrade());
        let chan = match found {
            Some(c) => c,
            None => {
                let c = Arc::new(self.open_channel()?);
                all.push((self.key.clone(), Arc::downgrade(&c)));
                c
            }
        };
        self.seq = chan.domain(self.domain);
        self.chan = Some(chan);
        Ok(())
    }

    fn open_channel(&self) -> Result<Channel, String> {
        let (_, collector, filename) = &self.key;
        let sock = match collector {
            Some(c) => {
                let addr = c
                    .to_socket_addrs()
                    .map_err(|e| format!("COLLECTOR {c}: {e}"))?
                    .next()
                    .ok_or_else(|| format!("COLLECTOR {c}: no address"))?;
                let s =
                    UdpSocket::bind(any_local(addr)).map_err(|e| format!("COLLECTOR {c}: {e}"))?;
                Some((s, addr))
            }
            None => None,
        };
        let path_payload = sock.as_ref().and_then(|(_, addr)| path_payload(*addr));
        let file = match filename {
            Some(f) => Some(Mutex::new(FileOut {
                w: BufWriter::with_capacity(
                    1 << 18,
                    File::create(f).map_err(|e| format!("{f}: {e}"))?,
                ),
                errors: 0,
            })),
            None => None,
        };
        Ok(Channel {
            sock,
            path_payload,
            next: Mutex::new(None),
            file,
            boot_ms: OnceLock::new(),
            domains: Mutex::new(Vec::new()),
        })
    }

    /// Send one message: `stamp(msg, seq)` writes the header with the
    /// domain's sequence number and returns what to add to it; then the
    /// paced datagram goes to the collector and the whole message to the
    /// file, under the domain's lock so its sequence numbers leave in order.
    /// Other domains (the other replicas) send at the same time through the
    /// same socket; they share only the pacer's and the file's short locks.
    pub fn send(&mut self, msg: &mut [u8], stamp: impl FnOnce(&mut [u8], u64) -> u64) {
        let Some(chan) = &self.chan else {
            return;
        };
        let mut seq = lock(&self.seq);
        let inc = stamp(msg, *seq);
        *seq += inc;
        if let Some((s, addr)) = &chan.sock {
            if let Some(wait) = self.gap.and_then(|gap| chan.pace(gap)) {
                std::thread::sleep(wait);
            }
            if s.send_to(msg, addr).is_err() {
                self.dropped += 1;
            }
        }
        if let Some(f) = &chan.file {
            let mut f = lock(f);
            if f.w.write_all(msg).is_err() {
                f.errors += 1;
            }
        }
        drop(seq);
        self.messages += 1;
        self.bytes += msg.len() as u64;
    }

    /// The largest message to build: `MTU` unless 0, else (once
    /// [`open`](Self::open)ed) the largest UDP payload the route to the
    /// collector carries unfragmented, else [`DEFAULT_MTU`]; within
    /// [`MIN_MTU`]..=[`MAX_MTU`].
    pub fn mtu(&self) -> usize {
        self.mtu_arg
            .or_else(|| self.chan.as_ref().and_then(|c| c.path_payload))
            .unwrap_or(DEFAULT_MTU)
            .clamp(MIN_MTU, MAX_MTU)
    }

    /// The domain's next sequence number.
    pub fn seq(&self) -> u64 {
        *lock(&self.seq)
    }

    /// The channel's NetFlow v9 boot time, set by the first caller.
    pub fn boot_ms(&self, proposal: u64) -> u64 {
        match &self.chan {
            Some(c) => *c.boot_ms.get_or_init(|| proposal),
            None => proposal,
        }
    }

    /// File write errors on the channel.
    pub fn file_errors(&self) -> u64 {
        self.chan
            .as_ref()
            .and_then(|c| c.file.as_ref())
            .map_or(0, |f| lock(f).errors)
    }

    /// Flush the file.
    pub fn finish(&mut self) {
        if let Some(f) = self.chan.as_ref().and_then(|c| c.file.as_ref()) {
            let mut f = lock(f);
            if f.w.flush().is_err() {
                f.errors += 1;
            }
        }
    }
}

/// The wildcard address and any port, of `addr`'s family: where a socket
/// that sends to `addr` binds.
fn any_local(addr: SocketAddr) -> SocketAddr {
    if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    }
}

/// The largest UDP payload to `addr` that needs no fragments: the path
/// MTU the kernel keeps for the route (a connected socket's `IP_MTU` or
/// `IPV6_MTU`: 65,536 on loopback, the interface's MTU or a learned
/// smaller one elsewhere) less the IP and UDP headers. `None` where the
/// kernel does not say.
fn path_payload(addr: SocketAddr) -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let s = UdpSocket::bind(any_local(addr)).ok()?;
        s.connect(addr).ok()?;
        let (level, name, ip_header) = if addr.is_ipv4() {
            (libc::IPPROTO_IP, libc::IP_MTU, 20)
        } else {
            (libc::IPPROTO_IPV6, libc::IPV6_MTU, 40)
        };
        let mut mtu: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a valid socket, an int-sized buffer and its length.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                level,
                name,
                &mut mtu as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        (r == 0)
            .then(|| usize::try_from(mtu).ok())
            .flatten()
            .and_then(|m| m.checked_sub(ip_header + 8))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = addr;
        None
    }
}

/// A message being filled: header room, then sets of records, kept under
/// the MTU. IPFIX sets need no padding; NetFlow v9 FlowSets are padded to
/// four bytes.
///
/// The buffer is as long as the largest message and zero past `end`: a
/// record's room is handed out zeroed by moving `end` (a `Vec::resize` a
/// record called `memset` for about 100 bytes, 92 instructions a record
/// with its tests, session 36), and [`reset`](Self::reset) zeroes what a
/// message used in one pass.
pub(crate) struct MsgBuf {
    buf: Vec<u8>,
    /// Bytes of the message so far (the header room included).
    end: usize,
    mtu: usize,
    hdr: usize,
    pad4: bool,
    set_at: usize,
    set_id: Option<u16>,
    /// Data records in the message.
    pub data_records: u32,
    /// Records of any kind (NetFlow v9's count).
    pub all_records: u32,
}

impl MsgBuf {
    pub fn new(mtu: usize, hdr: usize, pad4: bool) -> MsgBuf {
        MsgBuf {
            buf: vec![0; mtu.max(hdr)],
            end: hdr,
            mtu,
            hdr,
            pad4,
            set_at: 0,
            set_id: None,
            data_records: 0,
            all_records: 0,
        }
    }

    /// Set the largest message (the message must be empty).
    pub fn set_mtu(&mut self, mtu: usize) {
        debug_assert!(self.is_empty());
        self.mtu = mtu;
        self.buf.resize(mtu.max(self.hdr), 0);
    }

    /// True if nothing but the header is in the message.
    pub fn is_empty(&self) -> bool {
        self.end == self.hdr
    }

    /// The message so far (its header room first).
    pub fn message(&mut self) -> &mut [u8] {
        &mut self.buf[..self.end]
    }

    /// Where the message ends once the open set (if any) is padded.
    #[inline]
    fn padded_end(&self) -> usize {
        if self.pad4 && self.set_id.is_some() {
            self.set_at + (self.end - self.set_at).next_multiple_of(4)
        } else {
            self.end
        }
    }

    fn close_set(&mut self) {
        // The padding bytes are zero already.
        self.end = self.padded_end();
        if self.set_id.take().is_some() {
            let n = (self.end - self.set_at) as u16;
            self.buf[self.set_at + 2..self.set_at + 4].copy_from_slice(&n.to_be_bytes());
        }
    }

    /// Whether a record of `len` bytes in set `id` fits in the message,
    /// with its set's padding to come and, where it opens a new set, the
    /// open set's padding and the new set's header.
    #[inline]
    pub fn fits(&self, id: u16, len: usize) -> bool {
        let pad = if self.pad4 { 3 } else { 0 };
        let start = if self.set_id == Some(id) {
            self.end
        } else {
            self.padded_end() + 4
        };
        start + len + pad <= self.mtu
    }

    /// Room for a record of `len` bytes in set `id` (zeroed, at the end of
    /// the message), or `None` when the message is full.
    #[inline]
    pub fn record(&mut self, id: u16, len: usize, data: bool) -> Option<&mut [u8]> {
        if !self.fits(id, len) {
            return None;
        }
        if self.set_id != Some(id) {
            self.close_set();
            self.set_at = self.end;
            self.buf[self.end..self.end + 2].copy_from_slice(&id.to_be_bytes());
            self.end += 4;
            self.set_id = Some(id);
        }
        let at = self.end;
        self.end += len;
        self.all_records += 1;
        self.data_records += u32::from(data);
        self.buf.get_mut(at..at + len)
    }

    /// Close the last set; the message (header still to fill) is
    /// [`message`](Self::message).
    pub fn finish(&mut self) {
        self.close_set();
    }

    /// Start the next message.
    pub fn reset(&mut self) {
        self.buf[..self.end].fill(0);
        self.end = self.hdr;
        self.set_id = None;
        self.data_records = 0;
        self.all_records = 0;
    }
}

/// Write `v`'s low `out.len()` bytes big-endian.
#[inline]
pub(crate) fn put_be(out: &mut [u8], v: u64) {
    let b = v.to_be_bytes();
    out.copy_from_slice(&b[8 - out.len()..]);
}

/// The IPv4 address in an IPv4-mapped key address.
#[inline]
pub(crate) fn v4(a: &[u8; 16]) -> [u8; 4] {
    [a[12], a[13], a[14], a[15]]
}

/// True for ICMP and ICMPv6, whose key ports are (identifier, type/code).
#[inline]
pub(crate) fn is_icmp(proto: u8) -> bool {
    proto == 1 || proto == 58
}

/// The handlers both exporters offer.
pub(crate) const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("records"),
    HandlerSpec::counter("messages"),
    HandlerSpec::counter("bytes"),
    HandlerSpec::counter("dropped"),
    HandlerSpec::counter("ignored"),
    HandlerSpec::read("sequence"),
    HandlerSpec::read("mtu"),
];

/// The `Element` methods both exporters share (end of run, handlers,
/// summary counts): expanded inside each exporter's `impl Element`, whose
/// struct has the fields `records`, `tx`, `ignored_in`, `final_stats` and
/// `next_template_ns` and the methods `stats_record` and `send_message`.
macro_rules! exporter_methods {
    () => {
        fn cleanup(&mut self) {
            if self.next_template_ns.is_some() && !self.final_stats {
                self.stats_record();
                self.final_stats = true;
            }
            self.send_message();
            self.tx.finish();
        }

        fn handlers(&self) -> &[HandlerSpec] {
            $crate::flow::export::HANDLERS
        }

        fn read_handler(&self, name: &str) -> Option<String> {
            Some(match name {
                "records" => self.records.to_string(),
                "messages" => self.tx.messages.to_string(),
                "bytes" => self.tx.bytes.to_string(),
                "dropped" => self.tx.dropped.to_string(),
                "ignored" => self.ignored_in.to_string(),
                "sequence" => (self.tx.seq() as u32).to_string(),
                "mtu" => self.tx.mtu().to_string(),
                _ => return None,
            })
        }

        fn io_counts(&self) -> Option<IoCounts> {
            Some(IoCounts {
                source: false,
                packets: self.records,
                bytes: self.tx.bytes,
            })
        }

        fn summary_counts(&self) -> Vec<(&'static str, u64)> {
            vec![("records", self.records), ("dropped", self.tx.dropped)]
        }

        fn drops(&self) -> Vec<(&'static str, u64)> {
            vec![
                ("not a flow record", self.ignored_in),
                ("datagrams not sent", self.tx.dropped),
                ("file write errors", self.tx.file_errors()),
            ]
        }

        fn as_any(&self) -> &dyn Any {
            self
        }
    };
}
pub(crate) use exporter_methods;

#[cfg(test)]
mod tests {
    use super::MsgBuf;

    proptest::proptest! {
        /// Records go in while `record` takes them (any fits an empty
        /// message: 32 bytes hold a header, a set header, 20 bytes and
        /// padding); every message, its last set padded, stays within the
        /// MTU (the open set's padding once went uncounted when a record
        /// opened a new set: NetFlow v9 messages up to 3 bytes over).
        #[test]
        fn messages_stay_within_the_mtu(
            mtu in 32usize..200,
            pad4 in proptest::prelude::any::<bool>(),
            recs in proptest::collection::vec((256u16..259, 1usize..21), 1..60),
        ) {
            let mut m = MsgBuf::new(mtu, 4, pad4);
            for (id, len) in recs {
                if m.record(id, len, true).is_none() {
                    m.finish();
                    proptest::prop_assert!(m.message().len() <= mtu);
                    m.reset();
                    proptest::prop_assert!(m.record(id, len, true).is_some());
                }
            }
            m.finish();
            proptest::prop_assert!(m.message().len() <= mtu);
        }
    }

    /// Sets get their headers, lengths and (NetFlow v9) zero padding; a
    /// full message refuses a record; after `reset` a record's room is
    /// zero again, whatever the message before it held.
    #[test]
    fn records_are_handed_out_zeroed_and_sets_padded() {
        let mut m = MsgBuf::new(32, 4, true);
        assert!(m.is_empty());
        m.record(256, 5, true).expect("fits").fill(0xff);
        m.record(256, 5, true).expect("fits").fill(0xee);
        m.record(300, 3, false).expect("fits").fill(0xdd);
        // 4 + (4 + 10, padded to 16) + (4 + 3) = 27: 4 more bytes (and 3
        // of padding) do not fit in 32.
        assert!(m.record(300, 4, true).is_none());
        assert_eq!((m.data_records, m.all_records), (2, 3));
        m.finish();
        let mut want = vec![0u8; 4];
        want.extend([1, 0, 0, 16]);
        want.extend([0xff; 5]);
        want.extend([0xee; 5]);
        want.extend([0, 0]);
        want.extend([1, 44, 0, 8]);
        want.extend([0xdd, 0xdd, 0xdd, 0]);
        assert_eq!(m.message(), &want[..]);
        m.message()[..4].fill(0xcc);
        m.reset();
        assert!(m.is_empty() && m.message() == [0; 4]);
        assert_eq!(m.record(300, 20, true).expect("fits"), &[0; 20]);
    }
}
