// Package netns holds the network namespaces the guest suite makes for
// itself and what it builds in them (links, addresses, routes,
// neighbours); survival paths, the bench's traffic and the capability
// probe each work in namespaces of their own, never in the guest's.
package netns

import (
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NS is a network namespace the suite made for itself. It is not bind
// mounted anywhere: it lives as long as the handle (and anything created
// in it that holds a reference, like a socket) and vanishes on Close, with
// every device in it.
type NS struct {
	name string
	h    vnetns.NsHandle
	nl   *netlink.Handle
}

// New creates a namespace from a locked thread and returns that
// thread to the namespace it came from.
func New(name string) (*NS, error) {
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("netns %s: current namespace: %w", name, err)
	}
	defer func() { _ = orig.Close() }()
	h, err := vnetns.New()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("netns %s: create: %w", name, err)
	}
	if err := vnetns.Set(orig); err != nil {
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
	n := &NS{name: name, h: h, nl: nl}
	if err := n.linkUp("lo"); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Do runs f on a thread switched into the namespace. Sockets opened, and
// attachments made by ifindex, inside f belong to the namespace.
func (n *NS) Do(f func() error) error {
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: current namespace: %w", n.name, err)
	}
	defer func() { _ = orig.Close() }()
	if err := vnetns.Set(n.h); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: enter: %w", n.name, err)
	}
	ferr := f()
	if err := vnetns.Set(orig); err != nil {
		return fmt.Errorf("netns %s: leave: %w", n.name, err) // thread stays locked, see New
	}
	runtime.UnlockOSThread()
	return ferr
}

// Close releases the namespace; the kernel tears it down once nothing
// else refers to it.
func (n *NS) Close() {
	if n.nl != nil {
		n.nl.Close()
	}
	_ = n.h.Close()
}

// Link is the device called name.
func (n *NS) Link(name string) (netlink.Link, error) {
	l, err := n.nl.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("netns %s: link %s: %w", n.name, name, err)
	}
	return l, nil
}

// Ifindex is the index of the device called name.
func (n *NS) Ifindex(name string) (int, error) {
	l, err := n.Link(name)
	if err != nil {
		return 0, err
	}
	return l.Attrs().Index, nil
}

func (n *NS) linkUp(name string) error {
	l, err := n.Link(name)
	if err != nil {
		return err
	}
	if err := n.nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("netns %s: set %s up: %w", n.name, name, err)
	}
	return nil
}

// Sysctl writes a /proc/sys/net value as seen from the namespace.
func (n *NS) Sysctl(path, value string) error {
	return n.Do(func() error {
		if err := os.WriteFile("/proc/sys/"+path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("netns %s: sysctl %s=%s: %w", n.name, path, value, err)
		}
		return nil
	})
}

// Name is the name the namespace was made with, for messages.
func (n *NS) Name() string { return n.name }

// Handle is the namespace's netlink handle: what is asked through it
// (links, qdiscs, filters) is asked of this namespace.
func (n *NS) Handle() *netlink.Handle { return n.nl }
