package survival

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/suite/attach"
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/suite/netns"
)

// Survival topologies live in namespaces the suite creates and destroys,
// with addresses from the RFC 2544 benchmarking range (198.18.0.0/15): no
// packet can leave them.

// hook is where a program attaches.
type hook struct {
	ns  *netns.NS
	dev string
	dir attach.Direction
}

// topology is one built path: where the carrier's writer, generic XDP
// writer and reader go, how the writer hands the packet on, and how to
// send a test packet.
type topology struct {
	nss      []*netns.NS
	writer   hook   // tc writer, just before the mechanism under test
	xdp      hook   // generic XDP writer: the first receive point
	reader   hook   // tc ingress of the final receiver
	mode     uint32 // bpf.SurvPass / SurvRedirect / SurvRedirectPeer from the writer hook
	target   string // redirect target device, in the writer's namespace
	dst      netip.AddrPort
	dstNS    *netns.NS // where the receiving socket lives
	sendNS   *netns.NS
	rawDev   string // non-empty: inject raw frames on this device instead of a UDP socket
	rawSrc   netip.Addr
	rawDstHW net.HardwareAddr
}

func (t *topology) close() {
	for i := len(t.nss) - 1; i >= 0; i-- {
		t.nss[i].Close()
	}
}

// ns makes a namespace for the topology with reverse-path filtering off:
// a new namespace copies the initial one's settings, which may filter.
func (t *topology) ns(name string) (*netns.NS, error) {
	n, err := netns.New(name)
	if err != nil {
		return nil, err
	}
	t.nss = append(t.nss, n)
	for _, k := range []string{"all", "default"} {
		if err := n.Sysctl("net/ipv4/conf/"+k+"/rp_filter", "0"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// namespaces makes the named namespaces in order (see ns). On an error,
// those already made are in t.nss for close.
func (t *topology) namespaces(names ...string) ([]*netns.NS, error) {
	nss := make([]*netns.NS, len(names))
	for i, name := range names {
		n, err := t.ns(name)
		if err != nil {
			return nil, err
		}
		nss[i] = n
	}
	return nss, nil
}

// sendTo says the test packets go from a socket in from to ip:survPort,
// received in to.
func (t *topology) sendTo(from, to *netns.NS, ip string) {
	t.sendNS, t.dstNS = from, to
	t.dst = netip.AddrPortFrom(netip.MustParseAddr(ip), survPort)
}

// step runs setup steps until one fails.
func step(fs ...func() error) error {
	for _, f := range fs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// neighTo pins ns's neighbour ip on dev to the MAC of peerDev in peer.
func neighTo(ns *netns.NS, dev, ip string, peer *netns.NS, peerDev string) func() error {
	return func() error {
		hw, err := peer.MAC(peerDev)
		if err != nil {
			return err
		}
		return ns.AddNeigh(dev, ip, hw)
	}
}

// paths are the survival matrix's columns.
type pathDef struct {
	name     string
	requires []caps.Requirement
	build    func(t *topology) error
}

func paths() []pathDef {
	return []pathDef{
		{name: "loopback", build: buildLoopback},
		{name: "veth", requires: []caps.Requirement{caps.LinkKind("veth")}, build: buildVeth},
		{name: "veth-netns", requires: []caps.Requirement{caps.LinkKind("veth")}, build: buildVethNetns},
		{name: "redirect", requires: []caps.Requirement{caps.LinkKind("veth")}, build: buildRedirect(false)},
		{name: "redirect-peer", requires: []caps.Requirement{caps.LinkKind("veth")}, build: buildRedirect(true)},
		{name: "ipip", requires: []caps.Requirement{caps.LinkKind("veth"), caps.LinkKind("ipip")}, build: buildTunnel("ipip", 4)},
		{name: "gre", requires: []caps.Requirement{caps.LinkKind("veth"), caps.LinkKind("gre")}, build: buildTunnel("gre", 5)},
		{name: "forward", requires: []caps.Requirement{caps.LinkKind("veth")}, build: buildForward},
	}
}

// survPort is the test packets' UDP port (source and destination).
const survPort = 5789

// loopback: lo egress -> lo ingress in one namespace.
func buildLoopback(t *topology) error {
	a, err := t.ns("kci-lo")
	if err != nil {
		return err
	}
	t.writer, t.xdp, t.reader = hook{a, "lo", attach.Egress}, hook{a, "lo", attach.Ingress}, hook{a, "lo", attach.Ingress}
	t.sendTo(a, a, "127.0.0.1")
	return nil
}

// veth: both ends in one namespace. Both addresses would be local there,
// so a socket's packet would take lo; frames are injected on va instead.
func buildVeth(t *topology) error {
	a, err := t.ns("kci-veth")
	if err != nil {
		return err
	}
	err = step(
		func() error { return a.AddVeth("va", a, "vb") },
		func() error { return a.AddAddr("vb", "198.18.2.2/24") },
	)
	if err != nil {
		return err
	}
	hw, err := a.MAC("vb")
	if err != nil {
		return err
	}
	t.writer, t.xdp, t.reader = hook{a, "va", attach.Egress}, hook{a, "vb", attach.Ingress}, hook{a, "vb", attach.Ingress}
	t.sendTo(a, a, "198.18.2.2")
	// Not an address of the namespace: a local source arriving on vb
	// would be dropped as a martian.
	t.rawDev, t.rawSrc, t.rawDstHW = "va", netip.MustParseAddr("198.18.2.99"), hw
	return nil
}

// veth-netns: a veth pair across namespaces (skb_scrub_packet with xnet).
func buildVethNetns(t *topology) error {
	nss, err := t.namespaces("kci-a", "kci-b")
	if err != nil {
		return err
	}
	a, b := nss[0], nss[1]
	err = step(
		func() error { return a.AddVeth("va", b, "vb") },
		func() error { return a.AddAddr("va", "198.18.1.1/24") },
		func() error { return b.AddAddr("vb", "198.18.1.2/24") },
		neighTo(a, "va", "198.18.1.2", b, "vb"),
	)
	if err != nil {
		return err
	}
	t.writer, t.xdp, t.reader = hook{a, "va", attach.Egress}, hook{b, "vb", attach.Ingress}, hook{b, "vb", attach.Ingress}
	t.sendTo(a, b, "198.18.1.2")
	return nil
}

// redirect(-peer): A -va/vra- R -vrb/vb- B. The writer on vra's ingress
// redirects to vrb's egress (bpf_redirect) or straight into vb
// (bpf_redirect_peer). A addresses B's MAC directly, so the frame is
// B's as it leaves R.
func buildRedirect(peer bool) func(t *topology) error {
	return func(t *topology) error {
		nss, err := t.namespaces("kci-a", "kci-r", "kci-b")
		if err != nil {
			return err
		}
		a, r, b := nss[0], nss[1], nss[2]
		err = step(
			func() error { return a.AddVeth("va", r, "vra") },
			func() error { return r.AddVeth("vrb", b, "vb") },
			func() error { return a.AddAddr("va", "198.18.3.1/24") },
			func() error { return b.AddAddr("vb", "198.18.3.2/24") },
			neighTo(a, "va", "198.18.3.2", b, "vb"),
		)
		if err != nil {
			return err
		}
		t.writer, t.xdp, t.reader = hook{r, "vra", attach.Ingress}, hook{r, "vra", attach.Ingress}, hook{b, "vb", attach.Ingress}
		t.mode, t.target = bpf.SurvRedirect, "vrb"
		if peer {
			t.mode = bpf.SurvRedirectPeer
		}
		t.sendTo(a, b, "198.18.3.2")
		return nil
	}
}

// ipip/gre: A and B joined by a veth pair, a tunnel over it. The writer
// sits on the outer packet's ingress in B, the reader on the tunnel
// device: only decapsulation is between them.
func buildTunnel(kind string, net3 int) func(t *topology) error {
	return func(t *topology) error {
		nss, err := t.namespaces("kci-a", "kci-b")
		if err != nil {
			return err
		}
		a, b := nss[0], nss[1]
		outerA := netip.AddrFrom4([4]byte{198, 18, byte(net3), 1})
		outerB := netip.AddrFrom4([4]byte{198, 18, byte(net3), 2})
		innerA := fmt.Sprintf("198.19.%d.1", net3)
		innerB := fmt.Sprintf("198.19.%d.2", net3)
		tun := "t" + kind
		err = step(
			func() error { return a.AddVeth("va", b, "vb") },
			func() error { return a.AddAddr("va", outerA.String()+"/24") },
			func() error { return b.AddAddr("vb", outerB.String()+"/24") },
			neighTo(a, "va", outerB.String(), b, "vb"),
			func() error { return a.AddTunnel(kind, tun, outerA, outerB) },
			func() error { return b.AddTunnel(kind, tun, outerB, outerA) },
			func() error { return a.AddAddr(tun, innerA+"/32") },
			func() error { return b.AddAddr(tun, innerB+"/32") },
			func() error { return a.AddRoute(innerB+"/32", "", tun) },
		)
		if err != nil {
			return err
		}
		t.writer, t.xdp, t.reader = hook{b, "vb", attach.Ingress}, hook{b, "vb", attach.Ingress}, hook{b, tun, attach.Ingress}
		t.sendTo(a, b, innerB)
		return nil
	}
}

// forward: A -va/vra- R(ip_forward) -vrb/vb- B.
func buildForward(t *topology) error {
	nss, err := t.namespaces("kci-a", "kci-r", "kci-b")
	if err != nil {
		return err
	}
	a, r, b := nss[0], nss[1], nss[2]
	err = step(
		func() error { return r.Sysctl("net/ipv4/ip_forward", "1") },
		func() error { return a.AddVeth("va", r, "vra") },
		func() error { return r.AddVeth("vrb", b, "vb") },
		func() error { return a.AddAddr("va", "198.18.6.1/24") },
		func() error { return r.AddAddr("vra", "198.18.6.2/24") },
		func() error { return r.AddAddr("vrb", "198.18.7.1/24") },
		func() error { return b.AddAddr("vb", "198.18.7.2/24") },
		func() error { return a.AddRoute("198.18.7.0/24", "198.18.6.2", "va") },
		func() error { return b.AddRoute("198.18.6.0/24", "198.18.7.1", "vb") },
		neighTo(a, "va", "198.18.6.2", r, "vra"),
		neighTo(r, "vrb", "198.18.7.2", b, "vb"),
	)
	if err != nil {
		return err
	}
	t.writer, t.xdp, t.reader = hook{r, "vra", attach.Ingress}, hook{r, "vra", attach.Ingress}, hook{b, "vb", attach.Ingress}
	t.sendTo(a, b, "198.18.7.2")
	return nil
}
