package suite

import (
	"net/netip"
	"testing"
)

// TestSendTo: the destination is ip at the survival port, the socket
// ends in the namespaces given.
func TestSendTo(t *testing.T) {
	a, b := &netNS{name: "kci-a"}, &netNS{name: "kci-b"}
	var tp topology
	tp.sendTo(a, b, "198.19.4.2")
	if want := netip.MustParseAddrPort("198.19.4.2:5789"); tp.dst != want {
		t.Errorf("dst %s, want %s", tp.dst, want)
	}
	if tp.sendNS != a || tp.dstNS != b {
		t.Errorf("send in %s, receive in %s; want kci-a, kci-b", tp.sendNS.name, tp.dstNS.name)
	}
}
