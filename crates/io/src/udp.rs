//! Batched UDP socket I/O with `recvmmsg(2)` and `sendmmsg(2)` (Linux).
//!
//! A [`UdpPort`] is a non-blocking UDP socket bound to one local address. A
//! [`Mmsg`] holds the message headers, I/O vectors and address buffers of up
//! to a fixed number of datagrams, allocated once: receiving and sending a
//! batch allocates nothing. The datagram buffers are the caller's (packet
//! buffers of a pool), reached through a closure, so the data is read and
//! written in place.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// A non-blocking UDP socket bound to one local address, optionally
/// connected to one peer.
#[derive(Debug)]
pub struct UdpPort {
    sock: UdpSocket,
    local: SocketAddr,
    peer: Option<SocketAddr>,
}

impl UdpPort {
    /// Binds a non-blocking socket to `addr` (port 0 picks a free port).
    pub fn bind(addr: SocketAddr) -> io::Result<UdpPort> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        let local = sock.local_addr()?;
        Ok(UdpPort {
            sock,
            local,
            peer: None,
        })
    }

    /// Connects the socket to `peer`: only its datagrams are received, and
    /// datagrams sent without a destination go to it with the route looked
    /// up once (like the reference SCION router's link sockets).
    pub fn connect(&mut self, peer: SocketAddr) -> io::Result<()> {
        self.sock.connect(peer)?;
        self.peer = Some(peer);
        Ok(())
    }

    /// The connected peer, if any.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// The bound local address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The underlying socket.
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }
}

impl AsRawFd for UdpPort {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// What `recvmmsg` reported for one received datagram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvMeta {
    /// Bytes written into the buffer (at most the buffer's length).
    pub len: usize,
    /// The sender's address (`None` for an address family other than IP).
    pub peer: Option<SocketAddr>,
    /// The datagram was longer than the buffer and was cut (`MSG_TRUNC`).
    pub truncated: bool,
}

/// The outcome of [`Mmsg::send`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendStats {
    /// Datagrams the kernel accepted.
    pub sent: usize,
    /// Payload bytes of the datagrams the kernel accepted.
    pub bytes: usize,
    /// Datagrams refused (full send buffer, unreachable or bad address...).
    pub errors: usize,
    /// The last error's `errno`, 0 if none.
    pub last_errno: i32,
}

/// Preallocated `mmsghdr`/`iovec`/address arrays for batches of datagrams.
pub struct Mmsg {
    hdrs: Box<[libc::mmsghdr]>,
    iovs: Box<[libc::iovec]>,
    addrs: Box<[libc::sockaddr_storage]>,
    /// Per header: a `UDP_SEGMENT` control message (GSO).
    cmsgs: Box<[[u64; 4]]>,
    /// Per header: how many datagrams it carries.
    segs: Box<[usize]>,
}

/// The most segments of one GSO send (the kernel's `UDP_MAX_SEGMENTS` is
/// 64 on older kernels).
const GSO_MAX_SEGS: usize = 64;
/// The most payload bytes of one GSO send.
const GSO_MAX_BYTES: usize = 65_000;

// SAFETY: the raw pointers in the headers are rewritten before every system
// call and point only into buffers borrowed for that call; between calls
// they are never dereferenced, so moving the arrays to another thread is
// harmless.
unsafe impl Send for Mmsg {}

impl std::fmt::Debug for Mmsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mmsg")
            .field("capacity", &self.hdrs.len())
            .finish()
    }
}

impl Mmsg {
    /// Arrays for batches of up to `cap` (at least 1) datagrams.
    pub fn new(cap: usize) -> Mmsg {
        let cap = cap.max(1);
        // SAFETY: all-zero is a valid value of these plain C structs.
        unsafe {
            Mmsg {
                hdrs: (0..cap).map(|_| zeroed()).collect(),
                iovs: (0..cap).map(|_| zeroed()).collect(),
                addrs: (0..cap).map(|_| zeroed()).collect(),
                cmsgs: vec![[0u64; 4]; cap].into_boxed_slice(),
                segs: vec![0; cap].into_boxed_slice(),
            }
        }
    }

    /// The most datagrams one call handles.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Receives up to `min(bufs.len(), meta.len(), capacity)` datagrams
    /// without blocking, datagram `i` into `buf_of(&mut bufs[i])`, and
    /// describes them in `meta`. Returns how many arrived (0 when none is
    /// waiting).
    pub fn recv<T>(
        &mut self,
        sock: &impl AsRawFd,
        bufs: &mut [T],
        mut buf_of: impl FnMut(&mut T) -> &mut [u8],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        let n = bufs.len().min(meta.len()).min(self.capacity());
        if n == 0 {
            return Ok(0);
        }
        for (i, b) in bufs.iter_mut().take(n).enumerate() {
            let buf = buf_of(b);
            self.iovs[i] = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let h = &mut self.hdrs[i];
            h.msg_hdr.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = std::ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        let r = loop {
            // SAFETY: the first n headers point at live buffers borrowed
            // from `bufs` (exclusively, for this call) and at our own
            // address and iovec arrays.
            let r = unsafe {
                libc::recvmmsg(
                    sock.as_raw_fd(),
                    self.hdrs.as_mut_ptr(),
                    n as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(0),
                _ => return Err(e),
            }
        };
        for (i, m) in meta.iter_mut().take(r).enumerate() {
            let h = &self.hdrs[i];
            let len = (h.msg_len as usize).min(self.iovs[i].iov_len);
            *m = RecvMeta {
                len,
                peer: from_sockaddr(&self.addrs[i], h.msg_hdr.msg_namelen),
                truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            };
        }
        Ok(r)
    }

    /// Sends every message `m` of `msgs` as one datagram `msg_of(m)` =
    /// (payload, destination), `capacity` per system call, without
    /// blocking. A destination of `None` sends to the connected peer. A
    /// refused datagram is counted and skipped; when the send buffer is full
    /// (`EAGAIN`) the rest of the batch is counted as refused.
    pub fn send<'a, T>(
        &mut self,
        sock: &impl AsRawFd,
        msgs: &[T],
        msg_of: impl Fn(&T) -> (&'a [u8], Option<SocketAddr>),
    ) -> SendStats {
        self.submit(sock, msgs, msg_of, false)
    }

    /// Like [`send`](Self::send), with UDP generic segmentation offload:
    /// each run of consecutive messages to the same destination whose
    /// payloads have the same length (the run's last may be shorter), at
    /// most 64 datagrams and 65,000 bytes, goes to the kernel as one
    /// message with a `UDP_SEGMENT` control message, so the IP output path
    /// (route, headers, device) runs once per run instead of once per
    /// datagram; the datagrams on the wire are the same. A run the kernel
    /// refuses as a whole (no GSO support, a segment above the path MTU)
    /// is sent again datagram by datagram.
    pub fn send_gso<'a, T>(
        &mut self,
        sock: &impl AsRawFd,
        msgs: &[T],
        msg_of: impl Fn(&T) -> (&'a [u8], Option<SocketAddr>),
    ) -> SendStats {
        self.submit(sock, msgs, msg_of, true)
    }

    /// [`send`](Self::send) and, with `gso`, [`send_gso`](Self::send_gso):
    /// messages grouped into headers (one datagram each without GSO), then
    /// `sendmmsg` over the headers.
    fn submit<'a, T>(
        &mut self,
        sock: &impl AsRawFd,
        msgs: &[T],
        msg_of: impl Fn(&T) -> (&'a [u8], Option<SocketAddr>),
        gso: bool,
    ) -> SendStats {
        let mut st = SendStats::default();
        let mut start = 0;
        while start < msgs.len() {
            // Group up to `capacity` messages into headers.
            let n = (msgs.len() - start).min(self.capacity());
            let mut nh = 0usize;
            let mut seg_len = 0usize;
            let mut bytes = 0usize;
            let mut closed = false;
            let mut last_to: Option<Option<SocketAddr>> = None;
            for (k, m) in msgs[start..start + n].iter().enumerate() {
                let (data, to) = msg_of(m);
                self.iovs[k] = libc::iovec {
                    iov_base: data.as_ptr() as *mut libc::c_void,
                    iov_len: data.len(),
                };
                let joins = gso
                    && nh > 0
                    && !closed
                    && last_to == Some(to)
                    && data.len() <= seg_len
                    && self.segs[nh - 1] < GSO_MAX_SEGS
                    && bytes + data.len() <= GSO_MAX_BYTES;
                if joins {
                    self.segs[nh - 1] += 1;
                    self.hdrs[nh - 1].msg_hdr.msg_iovlen += 1;
                    bytes += data.len();
                    closed = data.len() < seg_len;
                    continue;
                }
                let h = &mut self.hdrs[nh].msg_hdr;
                match to {
                    Some(a) => {
                        h.msg_namelen = to_sockaddr(&a, &mut self.addrs[nh]);
                        h.msg_name = (&mut self.addrs[nh] as *mut libc::sockaddr_storage).cast();
                    }
                    None => {
                        h.msg_name = std::ptr::null_mut();
                        h.msg_namelen = 0;
                    }
                }
                h.msg_iov = &mut self.iovs[k];
                h.msg_iovlen = 1;
                h.msg_flags = 0;
                self.segs[nh] = 1;
                nh += 1;
                seg_len = data.len();
                bytes = data.len();
                closed = data.is_empty();
                last_to = Some(to);
            }
            for i in 0..nh {
                let seg = self.iovs_first_len(i);
                let h = &mut self.hdrs[i].msg_hdr;
                if self.segs[i] > 1 {
                    let c = &mut self.cmsgs[i];
                    // SAFETY: the buffer is 32 bytes, 8-aligned: room for
                    // one cmsghdr with a u16 (CMSG_SPACE(2) = 24).
                    unsafe {
                        let space = libc::CMSG_SPACE(2) as usize;
                        h.msg_control = c.as_mut_ptr().cast();
                        h.msg_controllen = space as _;
                        let cm = libc::CMSG_FIRSTHDR(h);
                        (*cm).cmsg_level = libc::SOL_UDP;
                        (*cm).cmsg_type = libc::UDP_SEGMENT;
                        (*cm).cmsg_len = libc::CMSG_LEN(2) as _;
                        std::ptr::write_unaligned(libc::CMSG_DATA(cm).cast::<u16>(), seg as u16);
                    }
                } else {
                    h.msg_control = std::ptr::null_mut();
                    h.msg_controllen = 0;
                }
            }
            let mut i = 0;
            while i < nh {
                // SAFETY: headers i..nh point at payloads borrowed from
                // `msgs` for this call and at our own arrays.
                let r = unsafe {
                    libc::sendmmsg(
                        sock.as_raw_fd(),
                        self.hdrs[i..].as_mut_ptr(),
                        (nh - i) as libc::c_uint,
                        libc::MSG_DONTWAIT,
                    )
                };
                if r > 0 {
                    for h in i..i + r as usize {
                        st.sent += self.segs[h];
                        st.bytes += self.hdr_bytes(h);
                    }
                    i += r as usize;
                    continue;
                }
                let e = io::Error::last_os_error();
                st.last_errno = e.raw_os_error().unwrap_or(0);
                match e.kind() {
                    io::ErrorKind::Interrupted => {}
                    io::ErrorKind::WouldBlock => {
                        st.errors += (i..nh).map(|h| self.segs[h]).sum::<usize>();
                        i = nh;
                    }
                    _ if self.segs[i] > 1 => {
                        self.send_one_by_one(sock, i, &mut st);
                        i += 1;
                    }
                    _ => {
                        st.errors += 1;
                        i += 1;
                    }
                }
            }
            start += n;
        }
        st
    }

    /// The length of the first datagram of header `h` (the segment size).
    fn iovs_first_len(&self, h: usize) -> usize {
        // SAFETY: msg_iov points into self.iovs, set up for this call.
        unsafe { (*self.hdrs[h].msg_hdr.msg_iov).iov_len }
    }

    /// Payload bytes of header `h`.
    fn hdr_bytes(&self, h: usize) -> usize {
        let m = &self.hdrs[h].msg_hdr;
        // SAFETY: msg_iov..+msg_iovlen lies in self.iovs.
        unsafe { std::slice::from_raw_parts(m.msg_iov, m.msg_iovlen) }
            .iter()
            .map(|v| v.iov_len)
            .sum()
    }

    /// Sends the datagrams of GSO header `h` one `sendmsg` each.
    fn send_one_by_one(&mut self, sock: &impl AsRawFd, h: usize, st: &mut SendStats) {
        let m = self.hdrs[h].msg_hdr;
        for k in 0..m.msg_iovlen {
            let mut one = m;
            // SAFETY: k < msg_iovlen: the iovec lies in self.iovs.
            one.msg_iov = unsafe { m.msg_iov.add(k) };
            one.msg_iovlen = 1;
            one.msg_control = std::ptr::null_mut();
            one.msg_controllen = 0;
            // SAFETY: a valid msghdr over borrowed payloads and our arrays.
            let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &one, libc::MSG_DONTWAIT) };
            if r >= 0 {
                st.sent += 1;
                // SAFETY: as above.
                st.bytes += unsafe { (*one.msg_iov).iov_len };
            } else {
                st.errors += 1;
                st.last_errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            }
        }
    }
}

/// Waits up to `timeout_ms` (0: not at all, as one `poll(2)`) for any of
/// the first 64 of `fds` to become readable. Returns the readable ones as a
/// bit mask (bit i: `fds[i]`); 0 if none is.
pub fn readable(fds: &[RawFd], timeout_ms: i32) -> u64 {
    const MAX: usize = 64;
    let mut p = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; MAX];
    let n = fds.len().min(MAX);
    for (q, fd) in p.iter_mut().zip(fds) {
        q.fd = *fd;
        q.events = libc::POLLIN;
    }
    // SAFETY: p holds n initialised pollfd entries.
    let r = unsafe { libc::poll(p.as_mut_ptr(), n as libc::nfds_t, timeout_ms) };
    if r <= 0 {
        return 0;
    }
    p[..n]
        .iter()
        .enumerate()
        .filter(|(_, q)| q.revents != 0)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// Writes `a` as a C socket address into `st`; returns its length.
fn to_sockaddr(a: &SocketAddr, st: &mut libc::sockaddr_storage) -> libc::socklen_t {
    match a {
        SocketAddr::V4(v) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((st as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(v) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v.port().to_be(),
                sin6_flowinfo: v.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v.ip().octets(),
                },
                sin6_scope_id: v.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((st as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// Reads a C socket address of length `len`.
fn from_sockaddr(st: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    match i32::from(st.ss_family) {
        libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let s: libc::sockaddr_in =
                unsafe { std::ptr::read((st as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(s.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(s.sin_port),
            )))
        }
        libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let s: libc::sockaddr_in6 =
                unsafe { std::ptr::read((st as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(s.sin6_addr.s6_addr),
                u16::from_be(s.sin6_port),
                s.sin6_flowinfo,
                s.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_round_trip() {
        for a in ["127.0.0.1:5", "[::1]:65535", "[2001:db8::7]:50000"] {
            let a: SocketAddr = a.parse().unwrap();
            // SAFETY: all-zero sockaddr_storage is valid.
            let mut st: libc::sockaddr_storage = unsafe { zeroed() };
            let n = to_sockaddr(&a, &mut st);
            assert_eq!(from_sockaddr(&st, n), Some(a));
            assert_eq!(from_sockaddr(&st, 2), None);
        }
    }

    /// Receive on `port` into `bufs`/`meta` until at least `want` datagrams
    /// have arrived (or about 10 s have passed); the number received.
    fn recv_at_least(
        m: &mut Mmsg,
        port: &UdpPort,
        bufs: &mut [Vec<u8>],
        meta: &mut [RecvMeta],
        want: usize,
    ) -> usize {
        let mut got = 0;
        for _ in 0..1000 {
            got += m
                .recv(port, &mut bufs[got..], |v| &mut v[..], &mut meta[got..])
                .unwrap();
            if got >= want {
                break;
            }
            readable(&[port.as_raw_fd()], 10);
        }
        got
    }

    #[test]
    fn batch_round_trip_on_loopback() {
        let a = UdpPort::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = UdpPort::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut m = Mmsg::new(4);
        let msgs: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 10 + usize::from(i)]).collect();
        let to = b.local_addr();
        let refs: Vec<&[u8]> = msgs.iter().map(|v| &v[..]).collect();
        let st = m.send(&a, &refs, |v| (*v, Some(to)));
        assert_eq!((st.sent, st.bytes, st.errors), (6, 75, 0));
        let mut bufs = vec![vec![0u8; 12]; 8];
        let mut meta = [RecvMeta::default(); 8];
        let got = recv_at_least(&mut m, &b, &mut bufs, &mut meta, 6);
        assert_eq!(got, 6);
        for (i, mt) in meta[..6].iter().enumerate() {
            assert_eq!(mt.peer, Some(a.local_addr()));
            assert_eq!(mt.len, (10 + i).min(12));
            assert_eq!(mt.truncated, 10 + i > 12);
            assert!(bufs[i][..mt.len].iter().all(|x| usize::from(*x) == i));
        }
        assert_eq!(m.recv(&b, &mut bufs, |v| &mut v[..], &mut meta).unwrap(), 0);
        // Connected: sends without a destination, receives only the peer's.
        let mut c = UdpPort::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        c.connect(b.local_addr()).unwrap();
        assert_eq!(c.peer_addr(), Some(b.local_addr()));
        let st = m.send(&c, &refs[..1], |v| (*v, None));
        assert_eq!((st.sent, st.errors), (1, 0));
        let got = recv_at_least(&mut m, &b, &mut bufs, &mut meta, 1);
        assert_eq!((got, meta[0].peer), (1, Some(c.local_addr())));
        // GSO: runs of equal lengths (the last shorter) arrive as the same
        // datagrams, in order.
        let lens = [100usize, 100, 100, 40, 100, 100, 7, 7, 3000];
        let data: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, l)| vec![i as u8; *l])
            .collect();
        let refs: Vec<&[u8]> = data.iter().map(|v| &v[..]).collect();
        let st = m.send_gso(&c, &refs, |v| (*v, None));
        assert_eq!(st.sent, lens.len(), "{st:?}");
        assert_eq!(st.bytes, lens.iter().sum::<usize>());
        let mut big = vec![vec![0u8; 4000]; 16];
        let mut meta = [RecvMeta::default(); 16];
        let got = recv_at_least(&mut m, &b, &mut big, &mut meta, lens.len());
        assert_eq!(got, lens.len());
        for (i, l) in lens.iter().enumerate() {
            assert_eq!(meta[i].len, *l);
            assert!(big[i][..*l].iter().all(|x| usize::from(*x) == i));
        }
    }
}
