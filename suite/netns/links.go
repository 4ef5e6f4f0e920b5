package netns

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The devices, addresses, routes and neighbours the survival paths are
// built of, each made in the namespace it is called on.

// AddVeth makes a veth pair, name in n and peerName in peer (n itself
// for both ends in one namespace), and sets both ends up.
func (n *NS) AddVeth(name string, peer *NS, peerName string) error {
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peerName}
	if peer != n {
		v.PeerNamespace = netlink.NsFd(int(peer.h))
	}
	if err := n.nl.LinkAdd(v); err != nil {
		return fmt.Errorf("netns %s: veth %s/%s: %w", n.name, name, peerName, err)
	}
	if err := n.linkUp(name); err != nil {
		return err
	}
	return peer.linkUp(peerName)
}

// AddTunnel makes an ipip or gre device from local to remote, up.
func (n *NS) AddTunnel(kind, name string, local, remote netip.Addr) error {
	attrs := netlink.LinkAttrs{Name: name}
	var l netlink.Link
	switch kind {
	case "ipip":
		l = &netlink.Iptun{LinkAttrs: attrs, Local: local.AsSlice(), Remote: remote.AsSlice(), Ttl: 64}
	case "gre":
		l = &netlink.Gretun{LinkAttrs: attrs, Local: local.AsSlice(), Remote: remote.AsSlice(), Ttl: 64}
	default:
		return fmt.Errorf("tunnel kind %q", kind)
	}
	if err := n.nl.LinkAdd(l); err != nil {
		return fmt.Errorf("netns %s: %s %s: %w", n.name, kind, name, err)
	}
	return n.linkUp(name)
}

// AddAddr puts the address prefix (198.18.1.1/24) on dev.
func (n *NS) AddAddr(dev, prefix string) error {
	l, err := n.Link(dev)
	if err != nil {
		return err
	}
	a, err := netlink.ParseAddr(prefix)
	if err != nil {
		return err
	}
	if err := n.nl.AddrAdd(l, a); err != nil {
		return fmt.Errorf("netns %s: addr %s on %s: %w", n.name, prefix, dev, err)
	}
	return nil
}

// MAC is dev's hardware address.
func (n *NS) MAC(dev string) (net.HardwareAddr, error) {
	l, err := n.Link(dev)
	if err != nil {
		return nil, err
	}
	return l.Attrs().HardwareAddr, nil
}

// AddNeigh pins a permanent neighbour entry, so no ARP exchange races
// the test packets.
func (n *NS) AddNeigh(dev, ip string, hw net.HardwareAddr) error {
	l, err := n.Link(dev)
	if err != nil {
		return err
	}
	err = n.nl.NeighAdd(&netlink.Neigh{
		LinkIndex: l.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
		IP: net.ParseIP(ip), HardwareAddr: hw,
	})
	if err != nil {
		return fmt.Errorf("netns %s: neigh %s on %s: %w", n.name, ip, dev, err)
	}
	return nil
}

// AddRoute routes dst via the gateway gw on dev, or straight out of dev
// (scope link) when gw is empty.
func (n *NS) AddRoute(dst, gw, dev string) error {
	l, err := n.Link(dev)
	if err != nil {
		return err
	}
	_, ipnet, err := net.ParseCIDR(dst)
	if err != nil {
		return err
	}
	r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipnet}
	if gw != "" {
		r.Gw = net.ParseIP(gw)
	} else {
		r.Scope = netlink.SCOPE_LINK
	}
	if err := n.nl.RouteAdd(r); err != nil {
		return fmt.Errorf("netns %s: route %s via %q dev %s: %w", n.name, dst, gw, dev, err)
	}
	return nil
}
