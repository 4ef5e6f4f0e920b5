package attach_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/suite/attach"
	"github.com/kci-dev/kci/suite/netns"
)

// The attachment tests load real (two-instruction) programs into the
// running kernel and hang them on a veth of a namespace of their own,
// which the test's Cleanup closes with everything in it, pass or fail;
// only the tracing test attaches outside a namespace, and its Cleanup
// detaches it.

// fakeAtt is an Attachment that records when it was closed.
type fakeAtt struct {
	name   string
	err    error
	closed *[]string
}

func (f fakeAtt) Close() error {
	*f.closed = append(*f.closed, f.name)
	return f.err
}

// TestDetachAll: attachments are closed last first, every one of them
// even when some fail, and every failure is in the error.
func TestDetachAll(t *testing.T) {
	var closed []string
	errB, errD := errors.New("b failed"), errors.New("d failed")
	as := []attach.Attachment{
		fakeAtt{"a", nil, &closed}, fakeAtt{"b", errB, &closed}, fakeAtt{"c", nil, &closed}, fakeAtt{"d", errD, &closed},
	}
	err := attach.DetachAll(as)
	if want := []string{"d", "c", "b", "a"}; !slices.Equal(closed, want) {
		t.Errorf("closed %v, want %v", closed, want)
	}
	if !errors.Is(err, errB) || !errors.Is(err, errD) {
		t.Errorf("DetachAll: %v, want both %v and %v", err, errB, errD)
	}
	closed = nil
	if err := attach.DetachAll(as[:1]); err != nil || !slices.Equal(closed, []string{"a"}) {
		t.Errorf("one good attachment: err %v, closed %v", err, closed)
	}
	if err := attach.DetachAll(nil); err != nil {
		t.Errorf("nothing to detach: %v", err)
	}
}

func TestDirectionString(t *testing.T) {
	if s := attach.Ingress.String(); s != "ingress" {
		t.Errorf("Ingress is %q", s)
	}
	if s := attach.Egress.String(); s != "egress" {
		t.Errorf("Egress is %q", s)
	}
}

// load loads spec, skipped only when the kernel refuses it for want of
// privilege or support.
func load(t *testing.T, spec *ebpf.ProgramSpec) *ebpf.Program {
	t.Helper()
	spec.License = "GPL"
	prog, err := ebpf.NewProgram(spec)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("loading a %s program needs CAP_BPF (CAP_SYS_ADMIN before 5.8): %v", spec.Type, err)
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("the kernel cannot load a %s program: %v", spec.Type, err)
	}
	if err != nil {
		t.Fatalf("load %s: %v", spec.Type, err)
	}
	t.Cleanup(func() { _ = prog.Close() })
	return prog
}

func returns(ret int32) asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, ret), asm.Return()}
}

func progID(t *testing.T, prog *ebpf.Program) ebpf.ProgramID {
	t.Helper()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Fatal("the kernel gives no program IDs")
	}
	return id
}

// vethNS is a fresh namespace with the veth pair va/vb in it.
func vethNS(t *testing.T) *netns.NS {
	t.Helper()
	ns, err := netns.New("kci-attach")
	if errors.Is(err, unix.EPERM) {
		t.Skipf("creating a network namespace needs CAP_SYS_ADMIN: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	err = ns.AddVeth("va", ns, "vb")
	if errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("the kernel cannot make a veth pair (CONFIG_VETH): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// attached returns a's Close, which the test's Cleanup calls instead if
// the test did not get that far.
func attached(t *testing.T, a attach.Attachment) func() error {
	done := false
	t.Cleanup(func() {
		if !done {
			_ = a.Close()
		}
	})
	return func() error { done = true; return a.Close() }
}

var tcxType = map[attach.Direction]ebpf.AttachType{attach.Ingress: ebpf.AttachTCXIngress, attach.Egress: ebpf.AttachTCXEgress}

// tcxProgs is the IDs of the programs on dev's TCX hook in dir.
func tcxProgs(t *testing.T, ns *netns.NS, dev string, dir attach.Direction) []ebpf.ProgramID {
	t.Helper()
	idx, err := ns.Ifindex(dev)
	if err != nil {
		t.Fatal(err)
	}
	var ids []ebpf.ProgramID
	err = ns.Do(func() error {
		r, err := link.QueryPrograms(link.QueryOptions{Target: idx, Attach: tcxType[dir]})
		if err != nil {
			return err
		}
		for _, p := range r.Programs {
			ids = append(ids, p.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("query tcx %s on %s: %v", dir, dev, err)
	}
	return ids
}

// TestTCX: TC with tcx hangs the program on the device and direction asked
// for, and nowhere else, through a TCX link; Close takes it off.
func TestTCX(t *testing.T) {
	for _, dir := range []attach.Direction{attach.Ingress, attach.Egress} {
		t.Run(dir.String(), func(t *testing.T) {
			ns := vethNS(t)
			prog := load(t, &ebpf.ProgramSpec{Name: "kci_tcx", Type: ebpf.SchedCLS, Instructions: returns(0)}) // TC_ACT_OK
			id := progID(t, prog)
			a, err := attach.TC(ns, "va", dir, prog, true)
			if errors.Is(err, ebpf.ErrNotSupported) {
				t.Skipf("the kernel has no TCX (Linux 6.6+): %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			detach := attached(t, a)
			l, ok := a.(link.Link)
			if !ok {
				t.Fatalf("a TCX attachment is a %T, not a bpf link", a)
			}
			info, err := l.Info()
			if err != nil {
				t.Fatal(err)
			}
			idx, err := ns.Ifindex("va")
			if err != nil {
				t.Fatal(err)
			}
			if info.Type != link.TCXType || info.Program != id || info.TCX() == nil || info.TCX().Ifindex != uint32(idx) {
				t.Errorf("link %+v (tcx %+v): want a TCX link of program %d on ifindex %d", info, info.TCX(), id, idx)
			}
			other := attach.Egress
			if dir == attach.Egress {
				other = attach.Ingress
			}
			if got := tcxProgs(t, ns, "va", dir); !slices.Equal(got, []ebpf.ProgramID{id}) {
				t.Errorf("va %s runs %v, want [%d]", dir, got, id)
			}
			for _, w := range []struct {
				dev string
				dir attach.Direction
			}{{"va", other}, {"vb", dir}, {"lo", dir}} {
				if got := tcxProgs(t, ns, w.dev, w.dir); len(got) != 0 {
					t.Errorf("%s %s runs %v, attached only on va %s", w.dev, w.dir, got, dir)
				}
			}
			if err := detach(); err != nil {
				t.Fatal(err)
			}
			if got := tcxProgs(t, ns, "va", dir); len(got) != 0 {
				t.Errorf("after Close va %s still runs %v", dir, got)
			}
		})
	}
}

// bpfFilters is the cls_bpf filters on dev under the clsact parent of dir.
func bpfFilters(t *testing.T, ns *netns.NS, dev string, dir attach.Direction) []*netlink.BpfFilter {
	t.Helper()
	l, err := ns.Link(dev)
	if err != nil {
		t.Fatal(err)
	}
	parent := uint32(netlink.HANDLE_MIN_INGRESS)
	if dir == attach.Egress {
		parent = netlink.HANDLE_MIN_EGRESS
	}
	fs, err := ns.Handle().FilterList(l, parent)
	if err != nil {
		t.Fatalf("filters on %s %s: %v", dev, dir, err)
	}
	var out []*netlink.BpfFilter
	for _, f := range fs {
		bf, ok := f.(*netlink.BpfFilter)
		if !ok {
			t.Errorf("%s %s has a %s filter", dev, dir, f.Type())
			continue
		}
		out = append(out, bf)
	}
	return out
}

// TestClsact: TC without tcx adds a clsact qdisc and a direct-action
// cls_bpf filter running the program in the direction asked for; a second
// direction reuses the qdisc; Close deletes the filter.
func TestClsact(t *testing.T) {
	ns := vethNS(t)
	prog := load(t, &ebpf.ProgramSpec{Name: "kci_cls", Type: ebpf.SchedCLS, Instructions: returns(0)})
	id := progID(t, prog)
	in, err := attach.TC(ns, "va", attach.Ingress, prog, false)
	if err != nil {
		t.Fatal(err)
	}
	detachIn := attached(t, in)
	if got := bpfFilters(t, ns, "va", attach.Egress); len(got) != 0 {
		t.Errorf("va egress has %d filters, only ingress was attached", len(got))
	}
	// The qdisc is there now: the egress attachment must not trip on it.
	eg, err := attach.TC(ns, "va", attach.Egress, prog, false)
	if err != nil {
		t.Fatalf("second direction on the same clsact: %v", err)
	}
	detachEg := attached(t, eg)

	va, err := ns.Link("va")
	if err != nil {
		t.Fatal(err)
	}
	qds, err := ns.Handle().QdiscList(va)
	if err != nil {
		t.Fatal(err)
	}
	var clsact int
	for _, q := range qds {
		if q.Type() == "clsact" {
			clsact++
		}
	}
	if clsact != 1 {
		t.Errorf("va has %d clsact qdiscs, want 1 (%v)", clsact, qds)
	}
	for _, dir := range []attach.Direction{attach.Ingress, attach.Egress} {
		fs := bpfFilters(t, ns, "va", dir)
		if len(fs) != 1 {
			t.Fatalf("va %s has %d bpf filters, want 1", dir, len(fs))
		}
		f := fs[0]
		if f.Id != int(id) || !f.DirectAction || f.Protocol != unix.ETH_P_ALL || !strings.HasPrefix(f.Name, "kci_cls") {
			t.Errorf("va %s filter: prog %d da %v proto %#x name %q; want prog %d, direct action, all protocols, named kci_cls",
				dir, f.Id, f.DirectAction, f.Protocol, f.Name, id)
		}
		if got := bpfFilters(t, ns, "vb", dir); len(got) != 0 {
			t.Errorf("vb %s has %d filters, only va was attached", dir, len(got))
		}
	}
	if err := detachIn(); err != nil {
		t.Fatal(err)
	}
	if got := bpfFilters(t, ns, "va", attach.Ingress); len(got) != 0 {
		t.Errorf("after Close va ingress still has %d filters", len(got))
	}
	if got := bpfFilters(t, ns, "va", attach.Egress); len(got) != 1 {
		t.Errorf("closing ingress took egress's filter too (%d left)", len(got))
	}
	if err := detachEg(); err != nil {
		t.Fatal(err)
	}
	if got := bpfFilters(t, ns, "va", attach.Egress); len(got) != 0 {
		t.Errorf("after Close va egress still has %d filters", len(got))
	}
	// Closing twice is an error naming the namespace, not a silent success.
	if err := eg.Close(); err == nil || !strings.Contains(err.Error(), "tc filter del on kci-attach") {
		t.Errorf("second Close: %v", err)
	}
}

// TestXDPGeneric: the program runs as skb-mode XDP on the device asked
// for, and Close takes it off.
func TestXDPGeneric(t *testing.T) {
	ns := vethNS(t)
	prog := load(t, &ebpf.ProgramSpec{Name: "kci_xdp", Type: ebpf.XDP, Instructions: returns(2)}) // XDP_PASS
	id := progID(t, prog)
	a, err := attach.XDPGeneric(ns, "vb", prog)
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("the kernel cannot attach XDP through a bpf link (Linux 5.9+): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	detach := attached(t, a)
	xdp := func(dev string) *netlink.LinkXdp {
		l, err := ns.Link(dev)
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().Xdp
	}
	if x := xdp("vb"); x == nil || !x.Attached || x.AttachMode != nl.XDP_ATTACHED_SKB || x.ProgId != uint32(id) {
		t.Errorf("vb's xdp %+v, want program %d attached in skb mode (%d)", x, id, nl.XDP_ATTACHED_SKB)
	}
	if x := xdp("va"); x != nil && x.Attached {
		t.Errorf("va has xdp %+v, only vb was attached", x)
	}
	if err := detach(); err != nil {
		t.Fatal(err)
	}
	if x := xdp("vb"); x != nil && x.Attached {
		t.Errorf("after Close vb still has xdp %+v", x)
	}
}

// TestMissingDevice: attaching to a device the namespace does not have
// fails with netlink's not-found, and attaches nothing.
func TestMissingDevice(t *testing.T) {
	ns := vethNS(t)
	cls := load(t, &ebpf.ProgramSpec{Type: ebpf.SchedCLS, Instructions: returns(0)})
	xdp := load(t, &ebpf.ProgramSpec{Type: ebpf.XDP, Instructions: returns(2)})
	var nf netlink.LinkNotFoundError
	for _, tcx := range []bool{true, false} {
		if _, err := attach.TC(ns, "nosuch0", attach.Ingress, cls, tcx); !errors.As(err, &nf) {
			t.Errorf("TC(tcx %v) on nosuch0: err %v, want a netlink.LinkNotFoundError", tcx, err)
		}
	}
	if _, err := attach.XDPGeneric(ns, "nosuch0", xdp); !errors.As(err, &nf) {
		t.Errorf("XDPGeneric on nosuch0: err %v, want a netlink.LinkNotFoundError", err)
	}
	// The wrong program type for the hook is the kernel's refusal, with
	// the hook, the namespace and the device in the message.
	_, err := attach.XDPGeneric(ns, "va", cls)
	if err == nil || !strings.Contains(err.Error(), "generic xdp on kci-attach/va") {
		t.Errorf("a sched_cls program as XDP: err %v", err)
	}
}

// TestTracing: a tp_btf program attaches to the tracepoint its spec names,
// and Close removes the link from the kernel.
func TestTracing(t *testing.T) {
	prog := load(t, &ebpf.ProgramSpec{
		Name: "kci_tp", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "kfree_skb",
		Instructions: returns(0),
	})
	id := progID(t, prog)
	a, err := attach.Tracing(prog)
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("the kernel cannot attach tp_btf programs: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	detach := attached(t, a)
	l, ok := a.(link.Link)
	if !ok {
		t.Fatalf("a tracing attachment is a %T, not a bpf link", a)
	}
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	// tp_btf goes through BPF_RAW_TRACEPOINT_OPEN: the kernel calls the
	// link a raw tracepoint one, named after the tracepoint.
	if info.Type != link.RawTracepointType || info.Program != id {
		t.Errorf("link %+v, want a raw tracepoint link of program %d", info, id)
	}
	if rt := info.RawTracepoint(); rt == nil || rt.Name != "kfree_skb" {
		t.Errorf("raw tracepoint info %+v, want the tracepoint kfree_skb", rt)
	}
	if err := detach(); err != nil {
		t.Fatal(err)
	}
	// The kernel drops the link's ID as it frees it.
	deadline := time.Now().Add(2 * time.Second)
	for {
		l2, err := link.NewFromID(info.ID)
		if errors.Is(err, unix.ENOENT) {
			break
		}
		if err == nil {
			_ = l2.Close()
		} else {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("link %d still in the kernel after Close", info.ID)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A program that is not a tracing program is refused, saying where.
	cls := load(t, &ebpf.ProgramSpec{Type: ebpf.SchedCLS, Instructions: returns(0)})
	if a, err := attach.Tracing(cls); err == nil {
		_ = a.Close()
		t.Error("a sched_cls program attached as tracing")
	} else if !strings.HasPrefix(err.Error(), "attach tracing: ") {
		t.Errorf("error %q does not say it was the tracing attachment", err)
	}
}
