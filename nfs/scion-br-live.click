// A SCION border router (scionproto v0.15.1 data plane) on live UDP sockets,
// like the reference router: one socket per interface of this router, bound
// to its underlay.local, and one on its internal_addr; the router is built
// from one element per pipeline step, as nfs/scion-br.click
// (nfs/scion-br-live-fused.click: the same as one SCIONRouter element,
// which is also what `linerate run` makes of this graph unless --no-fuse).
//
//   linerate run nfs/scion-br-live.click CONFIG=dir [ID=br-name] \
//       [NOW=unix-seconds] [BURST=n] [COALESCE=microseconds]
//
// CONFIG is the reference router's configuration folder (topology.json and
// keys/master0.key), the same as for nfs/scion-br.click. SCIONLinks receives
// datagrams in batches (recvmmsg) and hands them to the router as underlay
// frames (the sender's address as source, the socket's as destination);
// every frame the router sends goes back to SCIONLinks, which sends its UDP
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
// other SCIONConfig handlers (drops_*, scmp_*, slow_path, now).
//
// Step outputs: 0 is the next step; the others are listed below and in each
// element's documentation (docs/elements.md).

define($NOW system, $ID "", $BURST 64, $COALESCE 0)

br :: SCIONConfig(CONFIG $CONFIG, NOW $NOW, ID $ID);
links :: SCIONLinks(CONFIG $CONFIG, ID $ID, BURST $BURST, COALESCE $COALESCE);
scmp :: SCIONSCMPError(br);
slow :: Discard;
dropped :: Discard;

links
    -> parse :: SCIONParse(br)
    -> hop :: SCIONCheckHop(br)
    -> mac :: SCIONVerifyHop(br)
    -> route :: SCIONRoute(br)
    -> egress :: SCIONCheckEgress(br)
    -> advance :: SCIONAdvancePath(br)
    -> send :: SCIONEgress(br)
    -> links;
parse[1] -> onehop :: SCIONOneHop(br) -> links;
parse[2] -> slow;
parse[3] -> dropped;
hop[1] -> scmp;
hop[2] -> dropped;
mac[1] -> scmp;
mac[2] -> dropped;
route[1] -> mac;
route[2] -> deliver :: SCIONDeliver(br) -> links;
route[3] -> scmp;
route[4] -> slow;
route[5] -> dropped;
egress[1] -> scmp;
egress[2] -> slow;
egress[3] -> dropped;
advance[1] -> dropped;
send[1] -> dropped;
deliver[1] -> scmp;
deliver[2] -> dropped;
onehop[1] -> dropped;
scmp -> links;
scmp[1] -> dropped;
