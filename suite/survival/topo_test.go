package survival

import (
	"net/netip"
	"testing"

	"github.com/kci-dev/kci/suite/netns"
)

// TestSendTo: the destination is ip at the survival port, the socket
// ends in the namespaces given.
func TestSendTo(t *testing.T) {
	a, b := &netns.NS{}, &netns.NS{}
	var tp topology
	tp.sendTo(a, b, "198.19.4.2")
	if want := netip.MustParseAddrPort("198.19.4.2:5789"); tp.dst != want {
		t.Errorf("dst %s, want %s", tp.dst, want)
	}
	if tp.sendNS != a || tp.dstNS != b {
		t.Errorf("send in %p, receive in %p; want %p, %p", tp.sendNS, tp.dstNS, a, b)
	}
}
