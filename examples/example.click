// The bundled example: read a small mixed trace (TCP, UDP, ICMP over IPv4 and
// IPv6), split IP from non-IP packets, count both, and write the IP packets
// to a new trace.
//
//   linerate run examples/example.click
//   linerate run examples/example.click INPUT=other.pcap OUTPUT=/tmp/ip.pcap
//
// Handlers worth reading afterwards (-h): ip.count, ip.byte_count,
// other.count, out.count.

define($INPUT examples/example.pcap, $OUTPUT /tmp/linerate-example-out.pcap)

src :: FromDump($INPUT, STOP true, FORCE_IP true);
src[0] -> ip :: Counter -> out :: ToDump($OUTPUT);
src[1] -> other :: Counter -> Discard;
