// A SCION border router (scionproto v0.15.1 data plane) on live UDP sockets,
// like the reference router: one socket per interface of this router, bound
// to its underlay.local, and one on its internal_addr. The router is one
// fused SCIONRouter element; nfs/scion-br-live.click is the same router
// built from one element per step.
//
//   linerate run nfs/scion-br-live-fused.click CONFIG=dir [ID=br-name] \
//       [NOW=unix-seconds] [BURST=n] [COALESCE=microseconds]
//
// CONFIG is the reference router's configuration folder (topology.json and
// keys/master0.key), the same as for nfs/scion-br.click. SCIONLinks receives
// datagrams in batches (recvmmsg) and hands them to the router as underlay
// frames (the sender's address as source, the socket's as destination);
// the router's output goes back to SCIONLinks, which sends each frame's UDP
// payload from the socket of its underlay source to its underlay
// destination (sendmmsg). Slow-path frames (router alerts, BFD, EPIC-HP) are
// counted by br.slow_path and discarded: the live form runs no software
// router. NOW fixes the data-plane clock (default: the system clock).
// COALESCE (default 0: off) is SCIONLinks' interrupt moderation: after a
// short batch, wait that long for datagrams to gather (less CPU per packet
// under light load, up to that much more latency).
//
// Handlers (also in Prometheus via --http): links.ifN_rx_packets, _rx_bytes,
// _tx_packets, _tx_bytes, _tx_errors per interface id N and internal_*,
// links.tx_unroutable, links.rx_truncated; br.ifN_in_packets ... and the
// other SCIONRouter handlers (drops_*, scmp_*, slow_path, now).

define($NOW system, $ID "", $BURST 64, $COALESCE 0)

links :: SCIONLinks(CONFIG $CONFIG, ID $ID, BURST $BURST, COALESCE $COALESCE)
    -> br :: SCIONRouter(CONFIG $CONFIG, NOW $NOW, ID $ID)
    -> links;
br[1] -> Discard;
