package suite

import (
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netNS is a network namespace the suite made for itself. It is not bind
// mounted anywhere: it lives as long as the handle (and anything created
// in it that holds a reference, like a socket) and vanishes on Close, with
// every device in it.
type netNS struct {
	name string
	h    netns.NsHandle
	nl   *netlink.Handle
}

// newNetNS creates a namespace from a locked thread and returns that
// thread to the namespace it came from.
func newNetNS(name string) (*netNS, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("netns %s: current namespace: %w", name, err)
	}
	defer func() { _ = orig.Close() }()
	h, err := netns.New()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("netns %s: create: %w", name, err)
	}
	if err := netns.Set(orig); err != nil {
		// The thread is stuck in the new namespace: leave it locked so
		// the runtime discards it when this goroutine ends.
		_ = h.Close()
		return nil, fmt.Errorf("netns %s: return to the original namespace: %w", name, err)
	}
	runtime.UnlockOSThread()
	// Route only: a lean kernel has no xfrm or netfilter netlink.
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("netns %s: netlink: %w", name, err)
	}
	n := &netNS{name: name, h: h, nl: nl}
	if err := n.linkUp("lo"); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// do runs f on a thread switched into the namespace. Sockets opened, and
// attachments made by ifindex, inside f belong to the namespace.
func (n *netNS) do(f func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: current namespace: %w", n.name, err)
	}
	defer func() { _ = orig.Close() }()
	if err := netns.Set(n.h); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: enter: %w", n.name, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		return fmt.Errorf("netns %s: leave: %w", n.name, err) // thread stays locked, see newNetNS
	}
	runtime.UnlockOSThread()
	return ferr
}

// Close releases the namespace; the kernel tears it down once nothing
// else refers to it.
func (n *netNS) Close() {
	if n.nl != nil {
		n.nl.Close()
	}
	_ = n.h.Close()
}

func (n *netNS) link(name string) (netlink.Link, error) {
	l, err := n.nl.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("netns %s: link %s: %w", n.name, name, err)
	}
	return l, nil
}

func (n *netNS) ifindex(name string) (int, error) {
	l, err := n.link(name)
	if err != nil {
		return 0, err
	}
	return l.Attrs().Index, nil
}

func (n *netNS) linkUp(name string) error {
	l, err := n.link(name)
	if err != nil {
		return err
	}
	if err := n.nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("netns %s: set %s up: %w", n.name, name, err)
	}
	return nil
}

// sysctl writes a /proc/sys/net value as seen from the namespace.
func (n *netNS) sysctl(path, value string) error {
	return n.do(func() error {
		if err := os.WriteFile("/proc/sys/"+path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("netns %s: sysctl %s=%s: %w", n.name, path, value, err)
		}
		return nil
	})
}
