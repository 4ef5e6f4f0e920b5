// Package attach hangs the suite's BPF programs on devices of its
// namespaces (tc through TCX or clsact, generic XDP) and on tracepoints,
// and takes them off again.
package attach

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/suite/netns"
)

// Direction of a tc attachment.
type Direction int

const (
	Ingress Direction = iota
	Egress
)

func (d Direction) String() string {
	if d == Egress {
		return "egress"
	}
	return "ingress"
}

// Attachment is what the suite attached; Close detaches it.
type Attachment interface{ Close() error }

// DetachAll closes attachments in reverse order.
func DetachAll(as []Attachment) error {
	var errs []error
	for i := len(as) - 1; i >= 0; i-- {
		if err := as[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TC attaches a sched_cls program to dev's ingress or egress in ns:
// through a TCX link when the kernel has TCX, else as a direct-action
// cls_bpf filter on a clsact qdisc.
func TC(ns *netns.NS, dev string, dir Direction, prog *ebpf.Program, tcx bool) (Attachment, error) {
	idx, err := ns.Ifindex(dev)
	if err != nil {
		return nil, err
	}
	if tcx {
		typ := ebpf.AttachTCXIngress
		if dir == Egress {
			typ = ebpf.AttachTCXEgress
		}
		var l link.Link
		err := ns.Do(func() error {
			var err error
			l, err = link.AttachTCX(link.TCXOptions{Interface: idx, Program: prog, Attach: typ})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("tcx %s on %s/%s: %w", dir, ns.Name(), dev, err)
		}
		return l, nil
	}
	return attachClsact(ns, dev, idx, dir, prog)
}

type clsactFilter struct {
	ns     *netns.NS
	filter *netlink.BpfFilter
}

func (c *clsactFilter) Close() error {
	if err := c.ns.Handle().FilterDel(c.filter); err != nil {
		return fmt.Errorf("tc filter del on %s: %w", c.ns.Name(), err)
	}
	return nil
}

func attachClsact(ns *netns.NS, dev string, idx int, dir Direction, prog *ebpf.Program) (Attachment, error) {
	qd := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := ns.Handle().QdiscAdd(qd); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("clsact qdisc on %s/%s: %w", ns.Name(), dev, err)
	}
	parent := uint32(netlink.HANDLE_MIN_INGRESS)
	if dir == Egress {
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
	if err := ns.Handle().FilterAdd(f); err != nil {
		return nil, fmt.Errorf("tc filter %s on %s/%s: %w", dir, ns.Name(), dev, err)
	}
	return &clsactFilter{ns: ns, filter: f}, nil
}

// XDPGeneric attaches prog as generic (skb-mode) XDP on dev.
func XDPGeneric(ns *netns.NS, dev string, prog *ebpf.Program) (Attachment, error) {
	idx, err := ns.Ifindex(dev)
	if err != nil {
		return nil, err
	}
	var l link.Link
	err = ns.Do(func() error {
		var err error
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: idx, Flags: link.XDPGenericMode})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("generic xdp on %s/%s: %w", ns.Name(), dev, err)
	}
	return l, nil
}

// Tracing attaches a tp_btf program (the tracepoint is in its spec).
func Tracing(prog *ebpf.Program) (Attachment, error) {
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return nil, fmt.Errorf("attach tracing: %w", err)
	}
	return l, nil
}
