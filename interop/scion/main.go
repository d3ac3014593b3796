// Command scion-interop checks linerate's SCIONRouter against the reference
// SCION packet library (github.com/scionproto/scion v0.15.1): it builds
// packets with pkg/slayers and the reference hop-field MAC, writes a
// topology folder and an input pcap, runs `linerate run nfs/scion-br.click`,
// and decodes and checks every output frame with the same library.
//
// With -live-click, it then checks the live form as well (live.go): it
// writes a loopback topology, starts `linerate run nfs/scion-br-live.click`,
// sends the same reference-built packets from UDP sockets standing in for
// the neighbours and hosts, and checks what arrives at those sockets.
//
// Usage: scion-interop -linerate PATH [-click nfs/scion-br.click] [-work DIR]
//
//	[-live-click nfs/scion-br-live.click] [-live-args "COALESCE=200"] [-no-fuse]
package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"hash"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/scionproto/scion/pkg/addr"
	"github.com/scionproto/scion/pkg/scrypto"
	"github.com/scionproto/scion/pkg/slayers"
	"github.com/scionproto/scion/pkg/slayers/path"
	"github.com/scionproto/scion/pkg/slayers/path/onehop"
	"github.com/scionproto/scion/pkg/slayers/path/scion"
)

const (
	now    = 1700000100
	ts     = 1700000000
	master = "scion-vectors-k0"
)

var (
	local = addr.MustParseIA("1-ff00:0:110")
	macF  func() hash.Hash
)

const topo = `{
  "isd_as": "1-ff00:0:110", "mtu": 1472,
  "control_service": {"cs1": {"addr": "10.0.0.10:31000"}},
  "border_routers": {
    "br1": {"internal_addr": "10.0.0.1:30042", "interfaces": {
      "1": {"underlay": {"local": "192.0.2.1:50001", "remote": "192.0.2.101:50000"}, "isd_as": "1-ff00:0:100", "link_to": "parent", "mtu": 1472},
      "2": {"underlay": {"local": "192.0.2.2:50002", "remote": "192.0.2.102:50000"}, "isd_as": "1-ff00:0:111", "link_to": "child", "mtu": 1472},
      "3": {"underlay": {"local": "[2001:db8::1]:50003", "remote": "[2001:db8::103]:50000"}, "isd_as": "1-ff00:0:112", "link_to": "child", "mtu": 1472},
      "4": {"underlay": {"local": "192.0.2.4:50004", "remote": "192.0.2.104:50000"}, "isd_as": "1-ff00:0:120", "link_to": "peer", "mtu": 1472}}}
  }}`

// Underlay endpoints.
var (
	if1Local, if1Remote = "192.0.2.1:50001", "192.0.2.101:50000"
	if2Local, if2Remote = "192.0.2.2:50002", "192.0.2.102:50000"
	if3Local, if3Remote = "[2001:db8::1]:50003", "[2001:db8::103]:50000"
	if4Local, if4Remote = "192.0.2.4:50004", "192.0.2.104:50000"
	internal            = "10.0.0.1:30042"
	host                = "10.2.0.9:31000"
	// dstHost is the SCION destination host of the packets built here.
	dstHost = "10.1.0.7"
)

type hop struct{ in, eg uint16 }

// segment computes hop fields in construction order with the reference MAC,
// chaining the SegID accumulator; betas[k] is the accumulator of hop k.
type segment struct {
	cons  bool
	peer  bool
	hops  []path.HopField
	betas []uint16
}

func mkSeg(cons bool, beta0 uint16, hs ...hop) segment {
	s := segment{cons: cons, betas: []uint16{beta0}}
	for _, h := range hs {
		hf := path.HopField{ExpTime: 63, ConsIngress: h.in, ConsEgress: h.eg}
		b := s.betas[len(s.betas)-1]
		hf.Mac = path.MAC(macF(), path.InfoField{SegID: b, Timestamp: ts}, hf, nil)
		s.hops = append(s.hops, hf)
		s.betas = append(s.betas, b^uint16(hf.Mac[0])<<8^uint16(hf.Mac[1]))
	}
	return s
}

// travel returns the hop fields in travel order.
func (s segment) travel() []path.HopField {
	if s.cons {
		return s.hops
	}
	r := make([]path.HopField, len(s.hops))
	for i, h := range s.hops {
		r[len(s.hops)-1-i] = h
	}
	return r
}

type segUse struct {
	s     segment
	segID uint16
}

func mkPath(curINF, curHF uint8, segs ...segUse) *scion.Decoded {
	p := &scion.Decoded{}
	for i, u := range segs {
		p.PathMeta.SegLen[i] = uint8(len(u.s.hops))
		p.InfoFields = append(p.InfoFields, path.InfoField{ConsDir: u.s.cons, Peer: u.s.peer, SegID: u.segID, Timestamp: ts})
		p.HopFields = append(p.HopFields, u.s.travel()...)
	}
	p.PathMeta.CurrINF, p.PathMeta.CurrHF = curINF, curHF
	p.NumINF, p.NumHops = len(segs), len(p.HopFields)
	return p
}

// scionPkt serializes a SCION/UDP packet with the reference library.
func scionPkt(flow uint32, dst, src addr.IA, pth path.Path, dport uint16, srcHost string) []byte {
	s := &slayers.SCION{Version: 0, TrafficClass: 0xb8, FlowID: flow, NextHdr: slayers.L4UDP,
		PathType: pth.Type(), DstIA: dst, SrcIA: src, Path: pth}
	must(s.SetDstAddr(addr.HostIP(netip.MustParseAddr(dstHost))))
	must(s.SetSrcAddr(addr.HostIP(netip.MustParseAddr(srcHost))))
	u := &slayers.UDP{SrcPort: 40000, DstPort: dport}
	u.SetNetworkLayerForChecksum(s)
	buf := gopacket.NewSerializeBuffer()
	must(gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true},
		s, u, gopacket.Payload([]byte("interop payload"))))
	return append([]byte(nil), buf.Bytes()...)
}

func frame(src, dst string, payload []byte) []byte {
	sa, da := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sa.Port()), DstPort: layers.UDPPort(da.Port())}
	var ip gopacket.SerializableLayer
	if sa.Addr().Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: sa.Addr().AsSlice(), DstIP: da.Addr().AsSlice()}
		must(udp.SetNetworkLayerForChecksum(v4))
		ip = v4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: sa.Addr().AsSlice(), DstIP: da.Addr().AsSlice()}
		must(udp.SetNetworkLayerForChecksum(v6))
		ip = v6
	}
	buf := gopacket.NewSerializeBuffer()
	must(gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true},
		eth, ip, udp, gopacket.Payload(payload)))
	return append([]byte(nil), buf.Bytes()...)
}

// out is one decoded output frame.
type out struct {
	src, dst string
	raw      []byte // SCION bytes
	scn      slayers.SCION
}

type check func(in []byte, o []out) error

type tcase struct {
	name  string
	flow  uint32
	frame []byte
	in    []byte
	// Underlay source and destination of the input.
	src, dst string
	check    check
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func decodeOut(data []byte) (out, error) {
	p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	var o out
	if l := p.Layer(layers.LayerTypeIPv4); l != nil {
		ip := l.(*layers.IPv4)
		if ip.Checksum != ipv4Checksum(ip.Contents) {
			return o, fmt.Errorf("bad IPv4 header checksum")
		}
		o.src, o.dst = ip.SrcIP.String(), ip.DstIP.String()
	} else if l := p.Layer(layers.LayerTypeIPv6); l != nil {
		ip := l.(*layers.IPv6)
		o.src, o.dst = "["+ip.SrcIP.String()+"]", "["+ip.DstIP.String()+"]"
	} else {
		return o, fmt.Errorf("no IP layer")
	}
	ul := p.Layer(layers.LayerTypeUDP)
	if ul == nil {
		return o, fmt.Errorf("no UDP layer")
	}
	udp := ul.(*layers.UDP)
	o.src += fmt.Sprintf(":%d", udp.SrcPort)
	o.dst += fmt.Sprintf(":%d", udp.DstPort)
	// Verify the UDP checksum by recomputing it with gopacket.
	var nl gopacket.NetworkLayer = p.NetworkLayer()
	u2 := *udp
	must(u2.SetNetworkLayerForChecksum(nl))
	buf := gopacket.NewSerializeBuffer()
	must(gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, &u2, gopacket.Payload(udp.Payload)))
	if !bytes.Equal(buf.Bytes()[6:8], udp.Contents[6:8]) {
		return o, fmt.Errorf("bad UDP checksum %x want %x", udp.Contents[6:8], buf.Bytes()[6:8])
	}
	o.raw = udp.Payload
	if err := o.scn.DecodeFromBytes(o.raw, gopacket.NilDecodeFeedback); err != nil {
		return o, fmt.Errorf("SCION decode: %v", err)
	}
	return o, nil
}

func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func decoded(o out) (*scion.Decoded, error) {
	raw, ok := o.scn.Path.(*scion.Raw)
	if !ok {
		return nil, fmt.Errorf("path type %v", o.scn.Path.Type())
	}
	return raw.ToDecoded()
}

// forwarded expects exactly one frame from src to dst whose SCION packet is
// the input with PathMeta/SegIDs changed as `expect` says (byte for byte,
// reserialized with the reference library).
func forwarded(src, dst string, expect func(p *scion.Decoded)) check {
	return func(in []byte, os []out) error {
		if len(os) != 1 {
			return fmt.Errorf("%d frames out, want 1", len(os))
		}
		o := os[0]
		if o.src != src || o.dst != dst {
			return fmt.Errorf("underlay %s -> %s, want %s -> %s", o.src, o.dst, src, dst)
		}
		var s slayers.SCION
		must(s.DecodeFromBytes(in, gopacket.NilDecodeFeedback))
		switch p := s.Path.(type) {
		case *scion.Raw:
			d, err := p.ToDecoded()
			must(err)
			expect(d)
			s.Path = d
		case *onehop.Path:
			expect(nil)
		}
		want := serialize(&s)
		if !bytes.Equal(want, o.raw) {
			return fmt.Errorf("SCION packet differs:\n got  %x\n want %x", o.raw, want)
		}
		return nil
	}
}

func serialize(s *slayers.SCION) []byte {
	buf := gopacket.NewSerializeBuffer()
	must(gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, s, gopacket.Payload(s.Payload)))
	return append([]byte(nil), buf.Bytes()...)
}

// scmpReply expects one SCMP error back on the arrival link.
func scmpReply(src, dst string, typ slayers.SCMPType, code slayers.SCMPCode, pointer uint16) check {
	return func(in []byte, os []out) error {
		if len(os) != 1 {
			return fmt.Errorf("%d frames out, want 1", len(os))
		}
		o := os[0]
		if o.src != src || o.dst != dst {
			return fmt.Errorf("underlay %s -> %s, want %s -> %s", o.src, o.dst, src, dst)
		}
		var orig slayers.SCION
		must(orig.DecodeFromBytes(in, gopacket.NilDecodeFeedback))
		if o.scn.NextHdr != slayers.L4SCMP || o.scn.SrcIA != local || o.scn.DstIA != orig.SrcIA {
			return fmt.Errorf("reply header: next %v src %v dst %v", o.scn.NextHdr, o.scn.SrcIA, o.scn.DstIA)
		}
		if o.scn.FlowID != orig.FlowID || o.scn.TrafficClass != orig.TrafficClass {
			return fmt.Errorf("flow/TC not copied")
		}
		oh, _ := orig.SrcAddr()
		dh, _ := o.scn.DstAddr()
		sh, _ := o.scn.SrcAddr()
		if oh != dh || sh.String() != netip.MustParseAddrPort(internal).Addr().String() {
			return fmt.Errorf("reply hosts %v -> %v", sh, dh)
		}
		var m slayers.SCMP
		if err := m.DecodeFromBytes(o.scn.Payload, gopacket.NilDecodeFeedback); err != nil {
			return err
		}
		if m.TypeCode != slayers.CreateSCMPTypeCode(typ, code) {
			return fmt.Errorf("SCMP %v, want %v", m.TypeCode, slayers.CreateSCMPTypeCode(typ, code))
		}
		// Checksum: reserialize with the library and compare.
		m2 := m
		m2.SetNetworkLayerForChecksum(&o.scn)
		buf := gopacket.NewSerializeBuffer()
		must(gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, &m2, gopacket.Payload(m.Payload)))
		if !bytes.Equal(buf.Bytes(), o.scn.Payload) {
			return fmt.Errorf("SCMP checksum differs")
		}
		if typ == slayers.SCMPTypeParameterProblem {
			var pp slayers.SCMPParameterProblem
			must(pp.DecodeFromBytes(m.Payload, gopacket.NilDecodeFeedback))
			if pp.Pointer != pointer {
				return fmt.Errorf("pointer %d, want %d", pp.Pointer, pointer)
			}
			if len(pp.Payload) > len(in) || !bytes.Equal(pp.Payload[:12], in[:12]) {
				return fmt.Errorf("quote does not start with the offending packet")
			}
		}
		if len(o.raw) > slayers.MaxSCMPPacketLen {
			return fmt.Errorf("reply longer than %d", slayers.MaxSCMPPacketLen)
		}
		// The reversed path must be a valid path (decodes) whose
		// destination is the original source.
		if _, err := decoded(o); err != nil {
			return err
		}
		return nil
	}
}

func macOf(seg uint16, hf path.HopField) [6]byte {
	return path.MAC(macF(), path.InfoField{SegID: seg, Timestamp: ts}, hf, nil)
}

func xor(seg uint16, mac [6]byte) uint16 { return seg ^ (uint16(mac[0])<<8 | uint16(mac[1])) }

func cases() []tcase {
	var cs []tcase
	add := func(name string, src, dst string, pkt []byte, c check) {
		flow := uint32(len(cs) + 1)
		// The flow id (bytes 1..3 low 20 bits) identifies the case in the output.
		pkt[1] = pkt[1]&0xf0 | byte(flow>>16)&0x0f
		pkt[2], pkt[3] = byte(flow>>8), byte(flow)
		cs = append(cs, tcase{name: name, flow: flow, frame: frame(src, dst, pkt), in: pkt, src: src, dst: dst, check: c})
	}
	ia := addr.MustParseIA
	// Up segment 100 -> us -> 111 (construction order), traversed 111 -> us -> 100.
	up := mkSeg(false, 0x1234, hop{0, 7}, hop{1, 2}, hop{9, 0})
	add("transit child->parent (ConsDir=0)", if2Remote, if2Local,
		scionPkt(0, ia("1-ff00:0:100"), ia("1-ff00:0:111"), mkPath(0, 1, segUse{up, up.betas[2]}), 5000, "10.2.0.9"),
		forwarded(if1Local, if1Remote, func(p *scion.Decoded) {
			p.InfoFields[0].SegID = up.betas[1]
			must(p.IncPath())
		}))
	down := mkSeg(true, 0x4242, hop{0, 7}, hop{1, 2}, hop{9, 0})
	add("transit parent->child (ConsDir=1)", if1Remote, if1Local,
		scionPkt(0, ia("1-ff00:0:111"), ia("1-ff00:0:100"), mkPath(0, 1, segUse{down, down.betas[1]}), 5000, "10.2.0.9"),
		forwarded(if2Local, if2Remote, func(p *scion.Decoded) {
			p.InfoFields[0].SegID = down.betas[2]
			must(p.IncPath())
		}))
	xu := mkSeg(false, 0x0101, hop{0, 2}, hop{9, 0})
	xd := mkSeg(true, 0x0202, hop{0, 3}, hop{8, 0})
	add("crossover child->child (IPv6 egress)", if2Remote, if2Local,
		scionPkt(0, ia("1-ff00:0:112"), ia("1-ff00:0:111"), mkPath(0, 1, segUse{xu, xu.betas[1]}, segUse{xd, xd.betas[0]}), 5000, "10.2.0.9"),
		forwarded(if3Local, if3Remote, func(p *scion.Decoded) {
			p.InfoFields[0].SegID = xu.betas[0]
			p.InfoFields[1].SegID = xd.betas[1]
			must(p.IncPath())
			must(p.IncPath())
		}))
	// Peering: up segment 111 -> us with a peer hop (in 4 = peer, eg 2 = child),
	// then the peer's down segment; the peering MAC uses the SegID as carried.
	peerSeg := segment{cons: false, peer: true}
	ph := path.HopField{ExpTime: 63, ConsIngress: 4, ConsEgress: 2}
	ph.Mac = macOf(0x3333, ph)
	h111 := path.HopField{ExpTime: 63, ConsIngress: 9, ConsEgress: 0}
	h111.Mac = macOf(0x3333^uint16(ph.Mac[0])<<8^uint16(ph.Mac[1]), h111)
	peerSeg.hops = []path.HopField{ph, h111}
	otherSeg := segment{cons: true, peer: true}
	h120 := path.HopField{ExpTime: 63, ConsIngress: 5, ConsEgress: 0}
	h120.Mac = macOf(0x4444, h120)
	otherSeg.hops = []path.HopField{h120, h120}
	add("peering child->peer", if2Remote, if2Local,
		scionPkt(0, ia("1-ff00:0:120"), ia("1-ff00:0:111"), mkPath(0, 1, segUse{peerSeg, 0x3333}, segUse{otherSeg, 0x4444}), 5000, "10.2.0.9"),
		forwarded(if4Local, if4Remote, func(p *scion.Decoded) { must(p.IncPath()) }))
	// Outbound from a local host: our hop is the first traversed of an up segment.
	ob := mkSeg(false, 0x7777, hop{0, 7}, hop{1, 0})
	add("outbound from local host", host, internal,
		scionPkt(0, ia("1-ff00:0:100"), local, mkPath(0, 0, segUse{ob, ob.betas[1]}), 5000, "10.2.0.9"),
		forwarded(if1Local, if1Remote, func(p *scion.Decoded) { must(p.IncPath()) }))
	// Inbound delivery: last hop of a down segment.
	ib := mkSeg(true, 0x3030, hop{0, 7}, hop{1, 0})
	add("inbound delivery to host port", if1Remote, if1Local,
		scionPkt(0, local, ia("1-ff00:0:100"), mkPath(0, 1, segUse{ib, ib.betas[1]}), 31055, "10.2.0.9"),
		forwarded(internal, dstHost+":31055", func(p *scion.Decoded) {}))
	// One-hop paths.
	ohInfo := path.InfoField{ConsDir: true, SegID: 0x5555, Timestamp: ts}
	first := path.HopField{ExpTime: 63, ConsIngress: 0, ConsEgress: 1}
	first.Mac = path.MAC(macF(), ohInfo, first, nil)
	add("one-hop outbound", host, internal,
		scionPkt(0, ia("1-ff00:0:100"), local, &onehop.Path{Info: ohInfo, FirstHop: first}, 5000, "10.2.0.9"),
		forwardedOneHop(if1Local, if1Remote, func(p *onehop.Path) {
			p.Info.UpdateSegID(p.FirstHop.Mac)
		}))
	add("one-hop inbound", if1Remote, if1Local,
		scionPkt(0, local, ia("1-ff00:0:100"), &onehop.Path{Info: ohInfo, FirstHop: first}, 5000, "10.2.0.9"),
		forwardedOneHop(internal, dstHost+":5000", func(p *onehop.Path) {
			p.SecondHop = path.HopField{ExpTime: 63, ConsIngress: 1}
			p.SecondHop.Mac = path.MAC(macF(), p.Info, p.SecondHop, nil)
		}))
	// SCMP errors. Pointers: hop field 1 of a 1-segment path with v4 hosts.
	hf1 := uint16(12 + 24 + 4 + 8 + 12)
	upPkt := func(src addr.IA, p *scion.Decoded) []byte {
		return scionPkt(0, ia("1-ff00:0:100"), src, p, 5000, "10.2.0.9")
	}
	back2 := func(t slayers.SCMPType, c slayers.SCMPCode, ptr uint16) check {
		return scmpReply(if2Local, if2Remote, t, c, ptr)
	}
	pp := slayers.SCMPTypeParameterProblem
	exp := mkPath(0, 1, segUse{up, up.betas[2]})
	exp.InfoFields[0].Timestamp = ts - 90000
	add("SCMP PathExpired (52)", if2Remote, if2Local, upPkt(ia("1-ff00:0:111"), exp), back2(pp, slayers.SCMPCodePathExpired, hf1))
	bad := mkPath(0, 1, segUse{up, up.betas[2]})
	bad.HopFields[1].Mac[5] ^= 1
	add("SCMP InvalidHopFieldMAC (51)", if2Remote, if2Local, upPkt(ia("1-ff00:0:111"), bad), back2(pp, slayers.SCMPCodeInvalidHopFieldMAC, hf1))
	add("SCMP UnknownHopFieldEgress (50, wrong ingress link, ConsDir=0)", if1Remote, if1Local,
		upPkt(ia("1-ff00:0:111"), mkPath(0, 1, segUse{up, up.betas[2]})),
		scmpReply(if1Local, if1Remote, pp, slayers.SCMPCodeUnknownHopFieldEgress, hf1))
	add("SCMP UnknownHopFieldIngress (49, wrong ingress link, ConsDir=1)", if2Remote, if2Local,
		scionPkt(0, ia("1-ff00:0:111"), ia("1-ff00:0:100"), mkPath(0, 1, segUse{down, down.betas[1]}), 5000, "10.2.0.9"),
		back2(pp, slayers.SCMPCodeUnknownHopFieldIngress, hf1))
	sz := upPkt(ia("1-ff00:0:111"), mkPath(0, 1, segUse{up, up.betas[2]}))
	sz[7]++
	add("SCMP InvalidPacketSize (19)", if2Remote, if2Local, sz, back2(pp, slayers.SCMPCodeInvalidPacketSize, 0))
	add("SCMP InvalidSourceAddress (33)", if2Remote, if2Local, upPkt(local, mkPath(0, 1, segUse{up, up.betas[2]})),
		back2(pp, slayers.SCMPCodeInvalidSourceAddress, 20))
	add("SCMP InvalidDestinationAddress (34)", if2Remote, if2Local,
		scionPkt(0, local, ia("1-ff00:0:111"), mkPath(0, 1, segUse{up, up.betas[2]}), 5000, "10.2.0.9"),
		back2(pp, slayers.SCMPCodeInvalidDestinationAddress, 12))
	cc := mkSeg(false, 0x1234, hop{0, 7}, hop{3, 2}, hop{9, 0})
	add("SCMP InvalidPath (48)", if2Remote, if2Local, upPkt(ia("1-ff00:0:111"), mkPath(0, 1, segUse{cc, cc.betas[2]})),
		back2(pp, slayers.SCMPCodeInvalidPath, hf1))
	xp := mkSeg(true, 0x0202, hop{0, 1}, hop{8, 0})
	add("SCMP InvalidSegmentChange (53)", if2Remote, if2Local,
		upPkt(ia("1-ff00:0:111"), mkPath(0, 1, segUse{xu, xu.betas[1]}, segUse{xp, xp.betas[0]})),
		back2(pp, slayers.SCMPCodeInvalidSegmentChange, 12+24+4+8))
	svc := scionPkt(0, local, ia("1-ff00:0:100"), mkPath(0, 1, segUse{ib, ib.betas[1]}), 5000, "10.2.0.9")
	svc[9] = 0x40
	svc[28], svc[29] = 0x00, 0x03
	add("SCMP DestinationUnreachable (SVC without instance)", if1Remote, if1Local, svc,
		scmpReply(if1Local, if1Remote, slayers.SCMPTypeDestinationUnreachable, 0, 0))
	return cs
}

func forwardedOneHop(src, dst string, expect func(p *onehop.Path)) check {
	return func(in []byte, os []out) error {
		if len(os) != 1 {
			return fmt.Errorf("%d frames out, want 1", len(os))
		}
		o := os[0]
		if o.src != src || o.dst != dst {
			return fmt.Errorf("underlay %s -> %s, want %s -> %s", o.src, o.dst, src, dst)
		}
		var s slayers.SCION
		must(s.DecodeFromBytes(in, gopacket.NilDecodeFeedback))
		p := s.Path.(*onehop.Path)
		expect(p)
		want := serialize(&s)
		if !bytes.Equal(want, o.raw) {
			return fmt.Errorf("SCION packet differs:\n got  %x\n want %x", o.raw, want)
		}
		return nil
	}
}

func main() {
	bin := flag.String("linerate", "linerate", "linerate binary")
	click := flag.String("click", "nfs/scion-br.click", "router configuration")
	work := flag.String("work", "", "scratch folder (default: a temporary one)")
	liveClick := flag.String("live-click", "", "also check the live form with this configuration")
	liveArgs := flag.String("live-args", "", "more NAME=VALUE arguments for the live form, space-separated")
	noFuse := flag.Bool("no-fuse", false, "run the step elements as written (linerate run --no-fuse)")
	flag.Parse()
	var err error
	macF, err = scrypto.HFMacFactory([]byte(master))
	must(err)
	dir := *work
	if dir == "" {
		dir, err = os.MkdirTemp("", "scion-interop")
		must(err)
	}
	cfg := filepath.Join(dir, "config")
	must(os.MkdirAll(filepath.Join(cfg, "keys"), 0o755))
	must(os.WriteFile(filepath.Join(cfg, "topology.json"), []byte(topo), 0o644))
	must(os.WriteFile(filepath.Join(cfg, "keys", "master0.key"),
		[]byte(base64.StdEncoding.EncodeToString([]byte(master))+"\n"), 0o644))
	cs := cases()
	inPath, outPath := filepath.Join(dir, "in.pcap"), filepath.Join(dir, "out.pcap")
	f, err := os.Create(inPath)
	must(err)
	w := pcapgo.NewWriter(f)
	must(w.WriteFileHeader(65535, layers.LinkTypeEthernet))
	for i, c := range cs {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(now, int64(i)*1000), CaptureLength: len(c.frame), Length: len(c.frame)}
		must(w.WritePacket(ci, c.frame))
	}
	must(f.Close())
	run := []string{"run"}
	if *noFuse {
		run = append(run, "--no-fuse")
	}
	cmd := exec.Command(*bin, append(run, *click, "CONFIG="+cfg, "INPUT="+inPath, "OUTPUT="+outPath, fmt.Sprintf("NOW=%d", now))...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	must(cmd.Run())
	byFlow := map[uint32][]out{}
	rf, err := os.Open(outPath)
	must(err)
	r, err := pcapgo.NewReader(rf)
	must(err)
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		o, err := decodeOut(data)
		if err != nil {
			fmt.Printf("FAIL undecodable output frame: %v\n", err)
			os.Exit(1)
		}
		byFlow[o.scn.FlowID] = append(byFlow[o.scn.FlowID], o)
	}
	fails := checkCases("", cs, byFlow)
	if *liveClick != "" {
		fails += runLive(*bin, run, *liveClick, dir, strings.Fields(*liveArgs))
	}
	if fails > 0 {
		os.Exit(1)
	}
}

// checkCases checks each case against the frames that came out for its flow
// ID, prints one line per case (names prefixed with prefix) and a total,
// and returns the number of failed cases.
func checkCases(prefix string, cs []tcase, byFlow map[uint32][]out) int {
	fails := 0
	for _, c := range cs {
		if err := c.check(c.in, byFlow[c.flow]); err != nil {
			fails++
			fmt.Printf("FAIL %s%s: %v\n", prefix, c.name, strings.TrimSpace(err.Error()))
		} else {
			fmt.Printf("ok   %s%s\n", prefix, c.name)
		}
	}
	fmt.Printf("%s%d cases, %d failed\n", prefix, len(cs), fails)
	return fails
}
