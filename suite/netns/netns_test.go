package netns_test

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/suite/netns"
)

// These tests make real namespaces and devices, as root; everything they
// create lives in namespaces of their own (netns.New), which vanish with
// their devices when the test's Cleanup closes them, pass or fail.

// newNS is netns.New, skipped only when the kernel refuses to make a
// namespace for want of privilege.
func newNS(t *testing.T, name string) *netns.NS {
	t.Helper()
	n := mustNew(t, name)
	t.Cleanup(n.Close)
	return n
}

// mustNew is newNS for a test that closes the namespace itself.
func mustNew(t *testing.T, name string) *netns.NS {
	t.Helper()
	n, err := netns.New(name)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("creating a network namespace needs CAP_SYS_ADMIN: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// addVeth is n.AddVeth, skipped only on a kernel without veth.
func addVeth(t *testing.T, n *netns.NS, name string, peer *netns.NS, peerName string) {
	t.Helper()
	err := n.AddVeth(name, peer, peerName)
	if errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("the kernel cannot make a veth pair (CONFIG_VETH): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// current is the namespace of the calling thread (the caller locks it).
func current(t *testing.T) vnetns.NsHandle {
	t.Helper()
	h, err := vnetns.Get()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// hostHas says whether the test process's own namespace has a device
// called name (read only: the tests never change that namespace).
func hostHas(t *testing.T, name string) bool {
	t.Helper()
	_, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestNewAndDo: New returns the caller to the namespace it was in and
// gives a fresh namespace with lo up; Do runs its function inside that
// namespace, returns its error unchanged and comes back out.
func TestNewAndDo(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig := current(t)
	n := newNS(t, "kci-test")
	if now := current(t); !now.Equal(orig) {
		t.Fatalf("New left the thread in namespace %s, it came from %s", now, orig)
	}
	if n.Name() != "kci-test" {
		t.Errorf("Name() %q, made as kci-test", n.Name())
	}
	lo, err := n.Link("lo")
	if err != nil {
		t.Fatal(err)
	}
	if lo.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("lo in the new namespace is down (flags %v)", lo.Attrs().Flags)
	}
	ls, err := n.Handle().LinkList()
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Attrs().Name != "lo" {
		t.Errorf("a fresh namespace holds only lo, got %d links", len(ls))
	}

	var inside vnetns.NsHandle
	boom := errors.New("boom")
	err = n.Do(func() error {
		h, err := vnetns.Get()
		if err != nil {
			return err
		}
		inside = h
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Do returned %v, f returned %v", err, boom)
	}
	t.Cleanup(func() { _ = inside.Close() })
	if inside.Equal(orig) {
		t.Errorf("Do ran f in the caller's namespace %s", orig)
	}
	if now := current(t); !now.Equal(orig) {
		t.Errorf("Do left the thread in namespace %s, it came from %s", now, orig)
	}

	// A second Do enters the same namespace again; a second New another.
	err = n.Do(func() error {
		h, err := vnetns.Get()
		if err != nil {
			return err
		}
		defer func() { _ = h.Close() }()
		if !h.Equal(inside) {
			t.Errorf("second Do in %s, first in %s", h, inside)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := newNS(t, "kci-test2")
	err = m.Do(func() error {
		h, err := vnetns.Get()
		if err != nil {
			return err
		}
		defer func() { _ = h.Close() }()
		if h.Equal(inside) || h.Equal(orig) {
			t.Errorf("a second New gave namespace %s again", h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLinkMissing: asking for a device that is not there names the
// namespace and the device, with netlink's not-found underneath.
func TestLinkMissing(t *testing.T) {
	n := newNS(t, "kci-test")
	_, err := n.Ifindex("nosuch0")
	var nf netlink.LinkNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("Ifindex(nosuch0): err %v, want a netlink.LinkNotFoundError", err)
	}
	if !strings.Contains(err.Error(), "netns kci-test: link nosuch0") {
		t.Errorf("error %q does not name the namespace and the device", err)
	}
	if _, err := n.MAC("nosuch0"); err == nil {
		t.Error("MAC of a missing device: no error")
	}
	if err := n.AddAddr("nosuch0", "198.18.0.1/24"); err == nil {
		t.Error("AddAddr on a missing device: no error")
	}
	if err := n.AddRoute("198.18.0.0/24", "", "nosuch0"); err == nil {
		t.Error("AddRoute on a missing device: no error")
	}
}

// TestVethOneNamespace: both ends of a pair in one namespace exist, are
// veths, are up and are each other's peer; the caller's namespace gains no
// device; a second pair of the same name is refused.
func TestVethOneNamespace(t *testing.T) {
	hadVA, hadVB := hostHas(t, "va"), hostHas(t, "vb")
	n := newNS(t, "kci-test")
	addVeth(t, n, "va", n, "vb")
	va, err := n.Link("va")
	if err != nil {
		t.Fatal(err)
	}
	vb, err := n.Link("vb")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []netlink.Link{va, vb} {
		if l.Type() != "veth" {
			t.Errorf("%s is a %s, want veth", l.Attrs().Name, l.Type())
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s is down", l.Attrs().Name)
		}
	}
	if va.Attrs().ParentIndex != vb.Attrs().Index || vb.Attrs().ParentIndex != va.Attrs().Index {
		t.Errorf("va (peer %d) and vb (peer %d) are not each other's peer (%d, %d)",
			va.Attrs().ParentIndex, vb.Attrs().ParentIndex, va.Attrs().Index, vb.Attrs().Index)
	}
	idx, err := n.Ifindex("vb")
	if err != nil || idx != vb.Attrs().Index {
		t.Errorf("Ifindex(vb) = %d, %v; link says %d", idx, err, vb.Attrs().Index)
	}
	mac, err := n.MAC("va")
	if err != nil {
		t.Fatal(err)
	}
	if len(mac) != 6 || mac.String() != va.Attrs().HardwareAddr.String() {
		t.Errorf("MAC(va) = %v, link says %v", mac, va.Attrs().HardwareAddr)
	}
	err = n.AddVeth("va", n, "vc")
	if !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "netns kci-test: veth va/vc") {
		t.Errorf("a second va: err %v, want EEXIST naming the namespace and the pair", err)
	}
	if (!hadVA && hostHas(t, "va")) || (!hadVB && hostHas(t, "vb")) {
		t.Error("va or vb appeared in the caller's namespace")
	}
}

// TestVethAcrossAndClose: a pair between two namespaces has one end in
// each; closing one namespace takes its devices with it, and so the peer
// end in the other (the NS comment: it vanishes on Close, with every
// device in it).
func TestVethAcrossAndClose(t *testing.T) {
	a := newNS(t, "kci-a")
	b := mustNew(t, "kci-b")
	closed := false
	t.Cleanup(func() {
		if !closed {
			b.Close()
		}
	})
	addVeth(t, a, "va", b, "vb")
	if _, err := a.Link("va"); err != nil {
		t.Error(err)
	}
	if _, err := b.Link("vb"); err != nil {
		t.Error(err)
	}
	if _, err := a.Link("vb"); err == nil {
		t.Error("vb is in kci-a, it was made in kci-b")
	}
	if _, err := b.Link("va"); err == nil {
		t.Error("va is in kci-b, it was made in kci-a")
	}
	b.Close()
	closed = true
	// The kernel dismantles a namespace in a work queue: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := a.Link("va")
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("va still in kci-a 5s after its peer's namespace was closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAddrRouteNeigh: addresses, routes (via a gateway, and scope link
// without one) and permanent neighbours land on the device they name.
func TestAddrRouteNeigh(t *testing.T) {
	n := newNS(t, "kci-test")
	addVeth(t, n, "va", n, "vb")
	if err := n.AddAddr("va", "198.18.1.1/24"); err != nil {
		t.Fatal(err)
	}
	va, err := n.Link("va")
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := n.Handle().AddrList(va, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 1 || addrs[0].IPNet.String() != "198.18.1.1/24" {
		t.Errorf("va's addresses %v, want 198.18.1.1/24", addrs)
	}
	if err := n.AddAddr("va", "not-an-address"); err == nil {
		t.Error("AddAddr of not-an-address: no error")
	}

	if err := n.AddRoute("198.18.9.0/24", "198.18.1.2", "va"); err != nil {
		t.Fatal(err)
	}
	if err := n.AddRoute("198.18.8.7/32", "", "va"); err != nil {
		t.Fatal(err)
	}
	routes, err := n.Handle().RouteList(va, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	byDst := map[string]netlink.Route{}
	for _, r := range routes {
		if r.Dst != nil {
			byDst[r.Dst.String()] = r
		}
	}
	if r, ok := byDst["198.18.9.0/24"]; !ok {
		t.Errorf("no route to 198.18.9.0/24 on va: %v", routes)
	} else if !r.Gw.Equal(net.ParseIP("198.18.1.2")) || r.Scope != netlink.SCOPE_UNIVERSE {
		t.Errorf("route to 198.18.9.0/24: gw %v scope %v, want via 198.18.1.2 scope universe", r.Gw, r.Scope)
	}
	if r, ok := byDst["198.18.8.7/32"]; !ok {
		t.Errorf("no route to 198.18.8.7/32 on va: %v", routes)
	} else if r.Gw != nil || r.Scope != netlink.SCOPE_LINK {
		t.Errorf("route to 198.18.8.7/32: gw %v scope %v, want no gateway, scope link", r.Gw, r.Scope)
	}
	if err := n.AddRoute("198.18.10.0/33", "", "va"); err == nil {
		t.Error("AddRoute of 198.18.10.0/33: no error")
	}
	err = n.AddRoute("198.18.9.0/24", "198.18.1.2", "va")
	if !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "netns kci-test: route 198.18.9.0/24") {
		t.Errorf("the same route twice: err %v, want EEXIST naming the namespace and the route", err)
	}

	hw := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x42}
	if err := n.AddNeigh("va", "198.18.1.2", hw); err != nil {
		t.Fatal(err)
	}
	neighs, err := n.Handle().NeighList(va.Attrs().Index, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ne := range neighs {
		if ne.IP.Equal(net.ParseIP("198.18.1.2")) {
			found = true
			if ne.State != netlink.NUD_PERMANENT || ne.HardwareAddr.String() != hw.String() {
				t.Errorf("neighbour 198.18.1.2: state %#x lladdr %v, want permanent %v", ne.State, ne.HardwareAddr, hw)
			}
		}
	}
	if !found {
		t.Errorf("no neighbour 198.18.1.2 on va: %v", neighs)
	}
}

// TestTunnel: ipip and gre devices come up with the endpoints asked for;
// any other kind is refused before netlink is asked.
func TestTunnel(t *testing.T) {
	n := newNS(t, "kci-test")
	local, remote := netip.MustParseAddr("198.18.5.1"), netip.MustParseAddr("198.18.5.2")
	for kind, config := range map[string]string{"ipip": "CONFIG_NET_IPIP", "gre": "CONFIG_NET_IPGRE"} {
		t.Run(kind, func(t *testing.T) {
			name := "t" + kind
			err := n.AddTunnel(kind, name, local, remote)
			if errors.Is(err, unix.EOPNOTSUPP) {
				t.Skipf("the kernel cannot make a %s device (%s): %v", kind, config, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			l, err := n.Link(name)
			if err != nil {
				t.Fatal(err)
			}
			if l.Attrs().Flags&net.FlagUp == 0 {
				t.Errorf("%s is down", name)
			}
			var gotLocal, gotRemote net.IP
			switch tl := l.(type) {
			case *netlink.Iptun:
				gotLocal, gotRemote = tl.Local, tl.Remote
			case *netlink.Gretun:
				gotLocal, gotRemote = tl.Local, tl.Remote
			default:
				t.Fatalf("%s is a %T (%s)", name, l, l.Type())
			}
			if l.Type() != kind {
				t.Errorf("%s is a %s, want %s", name, l.Type(), kind)
			}
			if !gotLocal.Equal(local.AsSlice()) || !gotRemote.Equal(remote.AsSlice()) {
				t.Errorf("%s from %v to %v, want %v to %v", name, gotLocal, gotRemote, local, remote)
			}
		})
	}
	if err := n.AddTunnel("vxlan", "tv", local, remote); err == nil || !strings.Contains(err.Error(), `tunnel kind "vxlan"`) {
		t.Errorf("AddTunnel(vxlan): err %v, want the kind refused", err)
	}
	if _, err := n.Link("tv"); err == nil {
		t.Error("a refused kind still made a device")
	}
}

// TestSysctl: a value written through Sysctl is what the namespace reads,
// and the caller's namespace keeps its own.
func TestSysctl(t *testing.T) {
	const path = "net/ipv4/conf/lo/rp_filter"
	hostBefore, err := os.ReadFile("/proc/sys/" + path)
	if err != nil {
		t.Skipf("no /proc/sys/%s to compare with: %v", path, err)
	}
	n := newNS(t, "kci-test")
	read := func() string {
		var v []byte
		err := n.Do(func() error {
			var err error
			v, err = os.ReadFile("/proc/sys/" + path)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(v))
	}
	for _, want := range []string{"2", "0"} {
		if err := n.Sysctl(path, want); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != want {
			t.Errorf("after Sysctl(%s, %s) the namespace reads %s", path, want, got)
		}
	}
	if hostAfter, err := os.ReadFile("/proc/sys/" + path); err != nil || string(hostAfter) != string(hostBefore) {
		t.Errorf("the caller's %s is %q (%v), was %q", path, hostAfter, err, hostBefore)
	}
	err = n.Sysctl("net/ipv4/no_such_knob", "1")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "netns kci-test: sysctl net/ipv4/no_such_knob=1") {
		t.Errorf("Sysctl of a missing knob: err %v, want not-exist naming the namespace and the knob", err)
	}
}
