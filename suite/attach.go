package suite

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// direction of a tc attachment.
type direction int

const (
	ingress direction = iota
	egress
)

func (d direction) String() string {
	if d == egress {
		return "egress"
	}
	return "ingress"
}

// attachment is what the suite attached; Close detaches it.
type attachment interface{ Close() error }

// detachAll closes attachments in reverse order.
func detachAll(as []attachment) error {
	var errs []error
	for i := len(as) - 1; i >= 0; i-- {
		if err := as[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attachTC attaches a sched_cls program to dev's ingress or egress in ns:
// through a TCX link when the kernel has TCX, else as a direct-action
// cls_bpf filter on a clsact qdisc.
func attachTC(ns *netNS, dev string, dir direction, prog *ebpf.Program, tcx bool) (attachment, error) {
	idx, err := ns.ifindex(dev)
	if err != nil {
		return nil, err
	}
	if tcx {
		typ := ebpf.AttachTCXIngress
		if dir == egress {
			typ = ebpf.AttachTCXEgress
		}
		var l link.Link
		err := ns.do(func() error {
			var err error
			l, err = link.AttachTCX(link.TCXOptions{Interface: idx, Program: prog, Attach: typ})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("tcx %s on %s/%s: %w", dir, ns.name, dev, err)
		}
		return l, nil
	}
	return attachClsact(ns, dev, idx, dir, prog)
}

type clsactFilter struct {
	ns     *netNS
	filter *netlink.BpfFilter
}

func (c *clsactFilter) Close() error {
	if err := c.ns.nl.FilterDel(c.filter); err != nil {
		return fmt.Errorf("tc filter del on %s: %w", c.ns.name, err)
	}
	return nil
}

func attachClsact(ns *netNS, dev string, idx int, dir direction, prog *ebpf.Program) (attachment, error) {
	qd := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := ns.nl.QdiscAdd(qd); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("clsact qdisc on %s/%s: %w", ns.name, dev, err)
	}
	parent := uint32(netlink.HANDLE_MIN_INGRESS)
	if dir == egress {
		parent = netlink.HANDLE_MIN_EGRESS
	}
	info, _ := prog.Info()
	name := "kci"
	if info != nil {
		name = info.Name
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: idx, Parent: parent, Handle: 1, Priority: 1, Protocol: unix.ETH_P_ALL,
		},
		Fd: prog.FD(), Name: name, DirectAction: true,
	}
	if err := ns.nl.FilterAdd(f); err != nil {
		return nil, fmt.Errorf("tc filter %s on %s/%s: %w", dir, ns.name, dev, err)
	}
	return &clsactFilter{ns: ns, filter: f}, nil
}

// attachXDPGeneric attaches prog as generic (skb-mode) XDP on dev.
func attachXDPGeneric(ns *netNS, dev string, prog *ebpf.Program) (attachment, error) {
	idx, err := ns.ifindex(dev)
	if err != nil {
		return nil, err
	}
	var l link.Link
	err = ns.do(func() error {
		var err error
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: idx, Flags: link.XDPGenericMode})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("generic xdp on %s/%s: %w", ns.name, dev, err)
	}
	return l, nil
}

// attachTracing attaches a tp_btf program (the tracepoint is in its spec).
func attachTracing(prog *ebpf.Program) (attachment, error) {
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return nil, fmt.Errorf("attach tracing: %w", err)
	}
	return l, nil
}
