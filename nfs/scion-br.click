// A SCION border router (scionproto v0.15.1 data plane) replaying a capture,
// built from one element per pipeline step (docs/scion.md).
//
//   linerate run nfs/scion-br.click CONFIG=dir INPUT=in.pcap OUTPUT=out.pcap \
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
// sets it while running. nfs/scion-br-fused.click is the same router as one
// SCIONRouter element (the same step functions, fused: faster); `linerate
// run` runs this graph fused too, with the same frames and handlers, unless
// given --no-fuse (docs/scion.md).
//
// Handlers (also in Prometheus via --http): br.ifN_in_packets, _in_bytes,
// _out_packets, _out_bytes per interface id N and internal_*, br.drops_*,
// br.scmp_<code>, br.scmp_unreachable, br.slow_path.
//
// Step outputs: 0 is the next step; the others (SCMP error, slow path,
// dropped; one-hop paths from SCIONParse; crossover, back to the MAC check
// for the next segment's hop, and local delivery from SCIONRoute) are listed
// below and in each element's documentation (docs/elements.md).

define($NOW system, $SLOW /dev/null, $DROPPED /dev/null, $ID "")

br :: SCIONConfig(CONFIG $CONFIG, NOW $NOW, ID $ID);
out :: ToDump($OUTPUT, ENCAP ETHER);
slow :: ToDump($SLOW, ENCAP ETHER);
dropped :: ToDump($DROPPED, ENCAP ETHER);
scmp :: SCIONSCMPError(br);

FromDump($INPUT, STOP true)
    -> parse :: SCIONParse(br)
    -> hop :: SCIONCheckHop(br)
    -> mac :: SCIONVerifyHop(br)
    -> route :: SCIONRoute(br)
    -> egress :: SCIONCheckEgress(br)
    -> advance :: SCIONAdvancePath(br)
    -> send :: SCIONEgress(br)
    -> out;
parse[1] -> onehop :: SCIONOneHop(br) -> out;
parse[2] -> slow;
parse[3] -> dropped;
hop[1] -> scmp;
hop[2] -> dropped;
mac[1] -> scmp;
mac[2] -> dropped;
route[1] -> mac;
route[2] -> deliver :: SCIONDeliver(br) -> out;
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
scmp -> out;
scmp[1] -> dropped;
