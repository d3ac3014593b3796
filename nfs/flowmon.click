// flowmon.click: flow records from a trace (or a capture), exported by
// IPFIX or NetFlow v9. A microflow fast path (MicroflowTable) summarises
// short packet bursts; an aggregator (FlowAggregator) merges them into
// complete flows; FlowExport sends them to a collector.
//
//   linerate run nfs/flowmon.click INPUT=trace.pcap COLLECTOR=127.0.0.1:4739
//
// Variables (NAME=VALUE on the command line):
//   INPUT      pcap or pcapng file (read once, at full speed); a header
//              trace (frames cut to a snap length, their original lengths
//              kept: tcpdump -s 96, CAIDA, MAWI) gives the records of the
//              whole packets: the fast path parses a cut frame as it was
//              on the wire and bytes are counted from the IP length
//   COLLECTOR  host:port of the collector (nfcapd, ...)
//   PROTOCOL   ipfix (RFC 7011, with RFC 5103 biflows) or v9 (RFC 3954)
//   ACTIVE     active timeout in seconds, 0 = off (packet time for files)
//   IDLE       idle timeout in seconds, 0 = off
//   TCPEND     end a TCP flow on FIN/RST (true/false)
//   BIFLOW     RFC 5103 bidirectional records (true/false; v9 exports each
//              direction as its own record)
//   TABLE      fast-path table size in bytes (256KB .. 16MB)
//   WAYS       the fast path's associativity: 1 (direct-mapped) or 2 (on
//              the synthetic trace 2 keeps 2.66 packets a microflow instead
//              of 2.40, and the run is no faster: docs/performance.md)
//   FASTIDLE   the fast path's own idle/active eviction in seconds: keep it
//              well below IDLE so a flow's pieces reach the aggregator
//              before it times out there (0 = off)
//   PACE       export datagrams per second, 0 = as fast as possible
//   MTU        largest export datagram (UDP payload) in bytes; 0 = the
//              path MTU to the collector (64 KiB on loopback: 40 times
//              fewer datagrams than 1400, for a collector with a large
//              socket buffer; PACE counts datagrams, not bytes)
//   DOMAIN     observation domain (IPFIX) / source ID (v9)
//   BURST      packets FromDump reads per batch (1..256): the fast path
//              sends the aggregator one batch of microflow records per
//              batch of packets, and 256 packets (about 100 records on an
//              internet-like trace) keep the aggregator's prefetches in
//              flight where 64 (about 27) spend much of each batch
//              starting them: 11 % less time end to end
//
// The fast path parses the Ethernet frames itself (PARSE true: L4Parser's
// parser, run inside the table's first pass, so that no pass of its own
// writes annotations for the table to read back: 11.8 % fewer
// instructions, docs/performance.md, session 35). Packets that cannot be
// parsed (ARP, ...) are counted as ignored (ignoredPacketTotalCount in the
// IPFIX statistics record). At the end of the run every flow still in the
// tables is exported (forced end): nothing is lost.
//
// Several cores (RSS): `linerate run --replicate -j 2 nfs/flowmon.click ...`
// runs one copy of the pipeline per core; FromDump gives each copy the
// packets whose symmetric flow hash falls to it, so every flow (both
// directions) stays on one core and records are exact (the same totals as
// one core). The copies share one reader: each record is read and hashed
// once, by whichever copy walks that part of the file, and each copy flushes
// its tables on its own core at the end. The copies' exporters
// share one socket and pacer; each copy is an observation domain (source
// ID) of its own, DOMAIN + copy index, with its own sequence numbers, so
// the copies never wait for each other's sends.
//
// Fast path and aggregator on separate threads: put a Queue between them and
// place the Unqueue on the second thread:
//
//   ... -> fast :: MicroflowTable(...) -> Queue(65536) -> uq :: Unqueue(BURST 256)
//       -> agg :: FlowAggregator(...) -> FlowExport(...);
//   StaticThreadSched(src 0, uq 1);     // linerate run -j 2 ...
//
// At the end of the run the Unqueue empties the Queue into the aggregator
// (Click would leave those records in the Queue), so this variant loses
// nothing either; for files --replicate scales better (each core runs the
// whole pipeline).

define($INPUT trace.pcap, $COLLECTOR 127.0.0.1:4739, $PROTOCOL ipfix,
       $ACTIVE 300, $IDLE 60, $TCPEND true, $BIFLOW false, $TABLE 1MB, $WAYS 1,
       $FASTIDLE 10, $PACE 20000, $MTU 1400, $DOMAIN 1, $BURST 256);

src :: FromDump($INPUT, STOP true, BURST $BURST)
  -> fast :: MicroflowTable(PARSE true, TABLE $TABLE, WAYS $WAYS, IDLE $FASTIDLE, ACTIVE $FASTIDLE, TCPEND $TCPEND)
  -> agg :: FlowAggregator(ACTIVE $ACTIVE, IDLE $IDLE, TCPEND $TCPEND, BIFLOW $BIFLOW)
  -> export :: FlowExport(PROTOCOL $PROTOCOL, COLLECTOR $COLLECTOR, PACE $PACE, MTU $MTU,
                          DOMAIN $DOMAIN, IGNORED agg.ignored);
