// Command scion-e2e is the load generator and sink of bench/scion-e2e.sh,
// the end-to-end benchmark of SCION border routers through UDP sockets on
// loopback.
//
//	scion-e2e config -dir DIR -base PORT
//	    writes DIR/topology.json (AS 1-ff00:0:110, router br1: interface 1
//	    to a parent at 127.0.0.1:PORT+1 <-> 127.0.0.101:PORT+11, interface
//	    2 to a child at 127.0.0.2:PORT+2 <-> 127.0.0.102:PORT+12, internal
//	    address 127.0.0.1:PORT, BFD off), DIR/keys/master{0,1}.key and
//	    DIR/br.toml for the reference router (Prometheus metrics on
//	    127.0.0.1:PORT+90).
//	scion-e2e run -base PORT -size BYTES -secs S [-batch N]
//	    sends transit packets child -> parent (one hop-field MAC check at
//	    the router), built with the reference library, from the child's
//	    socket with sendmmsg batches for S seconds, as fast as it can, and
//	    counts with recvmmsg what arrives at the parent's socket. BYTES is
//	    the IPv4 packet size on the wire (IPv4 + UDP + SCION). The first
//	    packet of each batch carries its send time (nanoseconds since the
//	    start, little-endian) in its last 8 payload bytes, which transit
//	    routers do not read; the sink takes the one-way latency of each
//	    such packet it receives. Prints "sent N received M latency_us P50
//	    P99 samples K".
package main

import (
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"hash"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"golang.org/x/net/ipv4"

	"github.com/scionproto/scion/pkg/addr"
	"github.com/scionproto/scion/pkg/scrypto"
	"github.com/scionproto/scion/pkg/slayers"
	"github.com/scionproto/scion/pkg/slayers/path"
	"github.com/scionproto/scion/pkg/slayers/path/scion"
)

const master = "scion-e2e-bench0"

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func ep(ip string, port int) string { return fmt.Sprintf("%s:%d", ip, port) }

func writeConfig(dir string, base int) {
	must(os.MkdirAll(filepath.Join(dir, "keys"), 0o755))
	link := func(l, r, ia, to string) string {
		return fmt.Sprintf(`{"underlay": {"local": %q, "remote": %q}, "isd_as": %q, "link_to": %q, "mtu": 1472, "bfd": {"disable": true}}`, l, r, ia, to)
	}
	topo := fmt.Sprintf(`{
  "isd_as": "1-ff00:0:110", "mtu": 1472,
  "border_routers": {
    "br1": {"internal_addr": %q, "interfaces": {
      "1": %s,
      "2": %s}}
  }}
`, ep("127.0.0.1", base),
		link(ep("127.0.0.1", base+1), ep("127.0.0.101", base+11), "1-ff00:0:100", "parent"),
		link(ep("127.0.0.2", base+2), ep("127.0.0.102", base+12), "1-ff00:0:111", "child"))
	must(os.WriteFile(filepath.Join(dir, "topology.json"), []byte(topo), 0o644))
	k := []byte(base64.StdEncoding.EncodeToString([]byte(master)) + "\n")
	must(os.WriteFile(filepath.Join(dir, "keys", "master0.key"), k, 0o644))
	must(os.WriteFile(filepath.Join(dir, "keys", "master1.key"), k, 0o644))
	toml := fmt.Sprintf(`[general]
id = "br1"
config_dir = %q

[log.console]
level = "error"

[metrics]
prometheus = "127.0.0.1:%d"

[router.bfd]
disable = true
`, dir, base+90)
	must(os.WriteFile(filepath.Join(dir, "br.toml"), []byte(toml), 0o644))
}

// transit builds a SCION/UDP packet from the child AS 111 to the parent AS
// 100 through us (up segment, ConsDir=0, our hop field current) whose IPv4
// packet is `size` bytes.
func transit(size int) []byte {
	mf, err := scrypto.HFMacFactory([]byte(master))
	must(err)
	ts := uint32(time.Now().Unix() - 60)
	var macF func() hash.Hash = mf
	hops := []path.HopField{
		{ExpTime: 255, ConsIngress: 0, ConsEgress: 7},
		{ExpTime: 255, ConsIngress: 1, ConsEgress: 2},
		{ExpTime: 255, ConsIngress: 9, ConsEgress: 0},
	}
	betas := []uint16{0x1234}
	for i := range hops {
		b := betas[i]
		hops[i].Mac = path.MAC(macF(), path.InfoField{SegID: b, Timestamp: ts}, hops[i], nil)
		betas = append(betas, b^uint16(hops[i].Mac[0])<<8^uint16(hops[i].Mac[1]))
	}
	p := &scion.Decoded{}
	p.PathMeta.SegLen[0] = 3
	p.PathMeta.CurrHF = 1
	p.NumINF, p.NumHops = 1, 3
	p.InfoFields = []path.InfoField{{ConsDir: false, SegID: betas[2], Timestamp: ts}}
	p.HopFields = []path.HopField{hops[2], hops[1], hops[0]}
	s := &slayers.SCION{TrafficClass: 0, FlowID: 1, NextHdr: slayers.L4UDP,
		PathType: scion.PathType, DstIA: addr.MustParseIA("1-ff00:0:100"),
		SrcIA: addr.MustParseIA("1-ff00:0:111"), Path: p}
	must(s.SetDstAddr(addr.HostIP(netip.MustParseAddr("10.1.0.7"))))
	must(s.SetSrcAddr(addr.HostIP(netip.MustParseAddr("10.2.0.9"))))
	u := &slayers.UDP{SrcPort: 40000, DstPort: 5000}
	u.SetNetworkLayerForChecksum(s)
	// Header bytes: 12 common + 24 address + 4 meta + 8 info + 36 hops + 8 UDP.
	pay := size - 28 - (12 + 24 + 4 + 8 + 36 + 8)
	if pay < 0 {
		pay = 0
	}
	buf := gopacket.NewSerializeBuffer()
	must(gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true},
		s, u, gopacket.Payload(make([]byte, pay))))
	return append([]byte(nil), buf.Bytes()...)
}

func run(base, size int, secs float64, batch int) {
	child, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(ep("127.0.0.102", base+12))))
	must(err)
	parent, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(ep("127.0.0.101", base+11))))
	must(err)
	must(parent.SetReadBuffer(8 << 20))
	must(child.SetWriteBuffer(8 << 20))
	pkt := transit(size)
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(ep("127.0.0.2", base+2)))
	if len(pkt) < 92+8 {
		fmt.Fprintln(os.Stderr, "size too small for a send time in the payload")
		os.Exit(2)
	}
	t0 := time.Now()
	var received atomic.Int64
	var lat []int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		pc := ipv4.NewPacketConn(parent)
		msgs := make([]ipv4.Message, 256)
		for i := range msgs {
			msgs[i].Buffers = [][]byte{make([]byte, 2048)}
		}
		for {
			_ = parent.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			n, err := pc.ReadBatch(msgs, 0)
			if n > 0 {
				received.Add(int64(n))
				now := int64(time.Since(t0))
				for _, m := range msgs[:n] {
					if m.N < 8 {
						continue
					}
					if ts := int64(binary.LittleEndian.Uint64(m.Buffers[0][m.N-8 : m.N])); ts != 0 {
						lat = append(lat, now-ts)
					}
				}
			}
			if err != nil {
				select {
				case <-stop:
					return
				default:
				}
			}
		}
	}()
	pc := ipv4.NewPacketConn(child)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{pkt}
		msgs[i].Addr = to
	}
	stamped := append([]byte(nil), pkt...)
	msgs[0].Buffers = [][]byte{stamped}
	sent := 0
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		binary.LittleEndian.PutUint64(stamped[len(stamped)-8:], uint64(time.Since(t0)))
		n, err := pc.WriteBatch(msgs, 0)
		if n > 0 {
			sent += n
		}
		if err != nil {
			time.Sleep(10 * time.Microsecond)
		}
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	<-done
	slices.Sort(lat)
	q := func(f float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(f*float64(len(lat)-1))]) / 1e3
	}
	fmt.Printf("sent %d received %d latency_us %.0f %.0f samples %d\n",
		sent, received.Load(), q(0.5), q(0.99), len(lat))
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scion-e2e config|run [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "configuration folder to write")
	base := fs.Int("base", 31000, "first port")
	size := fs.Int("size", 150, "IPv4 packet size in bytes")
	secs := fs.Float64("secs", 5, "seconds to send")
	batch := fs.Int("batch", 64, "datagrams per sendmmsg")
	must(fs.Parse(os.Args[2:]))
	switch os.Args[1] {
	case "config":
		writeConfig(*dir, *base)
	case "run":
		run(*base, *size, *secs, *batch)
	default:
		fmt.Fprintln(os.Stderr, "usage: scion-e2e config|run [flags]")
		os.Exit(2)
	}
}
