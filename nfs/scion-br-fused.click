// A SCION border router (scionproto v0.15.1 data plane) replaying a capture,
// as one fused SCIONRouter element: the same router as nfs/scion-br.click
// (one element per step), the same step functions, faster (one parse per
// frame and a fast path for transit and crossover; docs/performance.md).
//
//   linerate run nfs/scion-br-fused.click CONFIG=dir INPUT=in.pcap OUTPUT=out.pcap \
//       NOW=unix-seconds [SLOW=slow.pcap] [DROPPED=dropped.pcap] [ID=br-name]
//
// CONFIG is the reference router's configuration folder (topology.json and
// keys/master0.key). INPUT holds Ethernet/IPv4-or-IPv6/UDP frames as captured
// on the router's links; each frame's ingress link is found from its underlay
// addresses. OUTPUT receives every frame the router sends (forwarded packets,
// local deliveries, SCMP replies) with the underlay addresses of the link or
// host it goes to. SLOW gets the frames for the slow path (router alerts, BFD,
// EPIC-HP), untouched; DROPPED the silently dropped ones. NOW fixes the
// data-plane clock (default: the system clock); the handler br.now reads and
// sets it while running.
//
// Handlers (also in Prometheus via --http): br.ifN_in_packets, _in_bytes,
// _out_packets, _out_bytes per interface id N and internal_*, br.drops_*,
// br.scmp_<code>, br.scmp_unreachable, br.slow_path.

define($NOW system, $SLOW /dev/null, $DROPPED /dev/null, $ID "")

FromDump($INPUT, STOP true)
    -> br :: SCIONRouter(CONFIG $CONFIG, NOW $NOW, ID $ID)
    -> ToDump($OUTPUT, ENCAP ETHER);
br[1] -> ToDump($SLOW, ENCAP ETHER);
br[2] -> ToDump($DROPPED, ENCAP ETHER);
