// The live form: linerate's nfs/scion-br-live.click on UDP sockets of a
// loopback topology, driven by UDP sockets standing in for the neighbours
// and local hosts, checked with the same reference-library checks as the
// offline form.
package main

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
)

// probeFlow marks readiness probes; their output is ignored.
const probeFlow = 0xfffff

// liveEndpoints points the endpoint variables at loopback addresses
// (ports from base) and returns the topology that matches them. Interface
// 3 uses ::1 when the machine has IPv6, else 127.0.0.3.
func liveEndpoints(base int) string {
	p := func(off int) int { return base + off }
	if1Local, if1Remote = fmt.Sprintf("127.0.0.1:%d", p(1)), fmt.Sprintf("127.0.0.101:%d", p(11))
	if2Local, if2Remote = fmt.Sprintf("127.0.0.2:%d", p(2)), fmt.Sprintf("127.0.0.102:%d", p(12))
	if l, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err == nil {
		l.Close()
		if3Local, if3Remote = fmt.Sprintf("[::1]:%d", p(3)), fmt.Sprintf("[::1]:%d", p(13))
	} else {
		if3Local, if3Remote = fmt.Sprintf("127.0.0.3:%d", p(3)), fmt.Sprintf("127.0.0.103:%d", p(13))
	}
	if4Local, if4Remote = fmt.Sprintf("127.0.0.4:%d", p(4)), fmt.Sprintf("127.0.0.104:%d", p(14))
	internal = fmt.Sprintf("127.0.0.1:%d", p(0))
	host = fmt.Sprintf("127.0.0.9:%d", p(9))
	dstHost = "127.0.0.7"
	link := func(l, r, ia, to string) string {
		return fmt.Sprintf(`{"underlay": {"local": %q, "remote": %q}, "isd_as": %q, "link_to": %q, "mtu": 1472, "bfd": {"disable": true}}`, l, r, ia, to)
	}
	return fmt.Sprintf(`{
  "isd_as": "1-ff00:0:110", "mtu": 1472,
  "control_service": {"cs1": {"addr": "127.0.0.10:%d"}},
  "border_routers": {
    "br1": {"internal_addr": %q, "interfaces": {
      "1": %s,
      "2": %s,
      "3": %s,
      "4": %s}}
  }}`, p(10), internal,
		link(if1Local, if1Remote, "1-ff00:0:100", "parent"),
		link(if2Local, if2Remote, "1-ff00:0:111", "child"),
		link(if3Local, if3Remote, "1-ff00:0:112", "child"),
		link(if4Local, if4Remote, "1-ff00:0:120", "peer"))
}

// peer is a socket standing in for a neighbour or host.
type peer struct {
	conn *net.UDPConn
	name string
}

// runLive checks the live form; returns the number of failed cases.
func runLive(bin string, run []string, click, dir string, args []string) int {
	base := 20000 + rand.Intn(400)*100
	cfg := filepath.Join(dir, "live-config")
	must(os.MkdirAll(filepath.Join(cfg, "keys"), 0o755))
	must(os.WriteFile(filepath.Join(cfg, "topology.json"), []byte(liveEndpoints(base)), 0o644))
	must(os.WriteFile(filepath.Join(cfg, "keys", "master0.key"),
		[]byte(base64.StdEncoding.EncodeToString([]byte(master))+"\n"), 0o644))
	cs := cases()

	// Sockets of the neighbours and hosts, bound before the router starts.
	peers := map[string]*peer{}
	for _, a := range []string{if1Remote, if2Remote, if3Remote, if4Remote, host, dstHost + ":31055", dstHost + ":5000"} {
		ua := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(a))
		c, err := net.ListenUDP("udp", ua)
		must(err)
		must(c.SetReadBuffer(1 << 20))
		peers[a] = &peer{conn: c, name: a}
	}
	defer func() {
		for _, p := range peers {
			p.conn.Close()
		}
	}()
	argv := append(append(run, click, "CONFIG="+cfg, fmt.Sprintf("NOW=%d", now)), args...)
	cmd := exec.Command(bin, append(argv, "-h", "links.if1_tx_packets", "-h", "links.tx_unroutable")...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	must(cmd.Start())
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	defer stop()

	// Collect every datagram arriving at a peer socket, by flow id.
	var mu sync.Mutex
	byFlow := map[uint32][]out{}
	var bad []string
	got := 0
	probed := make(chan struct{}, 1)
	for _, p := range peers {
		go func(p *peer) {
			buf := make([]byte, 9000)
			for {
				n, from, err := p.conn.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				o := out{src: canon(from), dst: p.name, raw: append([]byte(nil), buf[:n]...)}
				if err := o.scn.DecodeFromBytes(o.raw, gopacket.NilDecodeFeedback); err != nil {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%s: undecodable datagram: %v", p.name, err))
					mu.Unlock()
					continue
				}
				if o.scn.FlowID == probeFlow {
					select {
					case probed <- struct{}{}:
					default:
					}
					continue
				}
				mu.Lock()
				byFlow[o.scn.FlowID] = append(byFlow[o.scn.FlowID], o)
				got++
				mu.Unlock()
			}
		}(p)
	}
	send := func(c tcase, flow uint32) {
		pkt := append([]byte(nil), c.in...)
		pkt[1] = pkt[1]&0xf0 | byte(flow>>16)&0x0f
		pkt[2], pkt[3] = byte(flow>>8), byte(flow)
		_, err := peers[c.src].conn.WriteToUDPAddrPort(pkt, netip.MustParseAddrPort(c.dst))
		must(err)
	}
	// Readiness: the first (transit) case with the probe flow id, until the
	// router forwards one.
	ready := false
	for i := 0; i < 200 && !ready; i++ {
		send(cs[0], probeFlow)
		select {
		case <-probed:
			ready = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !ready {
		stop()
		fmt.Printf("FAIL live: the router never forwarded a probe\n%s", stderr.String())
		return 1
	}
	for _, c := range cs {
		send(c, c.flow)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := got
		mu.Unlock()
		if n >= len(cs) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // duplicates or strays would show up here
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bad {
		fmt.Printf("FAIL live: %s\n", b)
	}
	fails := len(bad) + checkCases("live: ", cs, byFlow)
	if fails > 0 {
		fmt.Print(stderr.String())
	}
	return fails
}

// canon writes an address as the topology does ("[::1]:p" for IPv6).
func canon(a netip.AddrPort) string {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()).String()
}
