// Package survival is the guest's survival matrix: for every carrier of
// per-packet metadata (skb extension, map keyed by the skb, skb->mark,
// XDP data_meta) and every path (loopback, veth, across namespaces,
// redirects, tunnels, forwarding), does the metadata written before the
// path reach the reader after it, as the cell's kernel reason expects.
package survival

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/suite/attach"
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/wire"
)

// Survival cell parameters.
const (
	cellPackets = 4
	cellWait    = 3 * time.Second // for the reader to see every packet
)

// Run runs every carrier × path cell on a kernel that has what have
// says, and reports each one. The error is for the machinery; a cell that
// does not match its expectation is a failed cell, not an error.
func Run(ctx context.Context, have wire.Caps, report func(wire.Cell) error) error {
	for _, p := range paths() {
		if err := runPath(ctx, have, p, report); err != nil {
			return err
		}
	}
	return nil
}

// Size is the number of cells Run reports: carriers × paths.
func Size() int { return len(carriers()) * len(paths()) }

// runPath builds one path, if any of its cells can run on this kernel,
// and runs every carrier over it.
func runPath(ctx context.Context, have wire.Caps, p pathDef, report func(wire.Cell) error) error {
	var t *topology
	var buildErr error
	for _, c := range carriers() {
		if expect(c, p, have).expected != skip {
			t = &topology{}
			buildErr = p.build(t)
			defer t.close()
			if buildErr != nil {
				t = nil
			}
			break
		}
	}
	for _, c := range carriers() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := report(runCell(have, c, p, t, buildErr)); err != nil {
			return err
		}
	}
	return nil
}

// runCell runs one cell on a built topology (nil if building failed with
// buildErr) and judges it against its expectation.
func runCell(have wire.Caps, c carrierDef, p pathDef, t *topology, buildErr error) wire.Cell {
	exp := expect(c, p, have)
	cell := wire.Cell{Carrier: c.name, Path: p.name, Expected: exp.expected, Reason: exp.reason}
	if exp.expected == skip {
		cell.Observed, cell.Pass = skip, true
		return cell
	}
	if t == nil {
		cell.Observed, cell.Detail = errored, fmt.Sprintf("build path: %v", buildErr)
		if caps.NotSupported(buildErr) {
			cell.Observed = skip // the kernel's own answer, though caps said it could
		}
		return cell
	}
	res, received, err := exercise(have, c, t)
	if err != nil {
		cell.Observed, cell.Detail = errored, err.Error()
		if caps.NotSupported(err) {
			cell.Observed = skip
		}
		return cell
	}
	cell.Observed, cell.Detail = observe(res, received, cellPackets)
	cell.Pass = cell.Observed == cell.Expected
	return cell
}

// observe turns the reader's counters into an outcome.
func observe(res [bpf.ResMax]uint64, received, sent int) (string, string) {
	detail := fmt.Sprintf("sent %d, written %d, write failures %d, seen %d, intact %d, absent %d, mismatched %d, delivered %d",
		sent, res[bpf.ResWritten], res[bpf.ResWriteFail], res[bpf.ResSeen], res[bpf.ResOK], res[bpf.ResAbsent], res[bpf.ResMismatch], received)
	switch {
	case res[bpf.ResWritten] != uint64(sent):
		return errored, "the writer did not store every packet's metadata: " + detail
	case res[bpf.ResSeen] != uint64(sent):
		return errored, "the reader did not see every test packet: " + detail
	case res[bpf.ResOK] == uint64(sent):
		return survives, detail
	case res[bpf.ResOK] == 0:
		return lost, detail
	}
	return errored, "some packets kept the metadata, some lost it: " + detail
}

// exercise loads the carrier's programs, attaches them to the topology,
// sends the test packets and returns the reader's counters and how many
// packets the receiving socket got.
func exercise(have wire.Caps, c carrierDef, t *topology) (res [bpf.ResMax]uint64, received int, err error) {
	coll, err := loadCarrier(c, t)
	if err != nil {
		return res, 0, err
	}
	defer coll.Close()
	atts, err := attachCarrier(have, c, t, coll)
	defer func() { _ = attach.DetachAll(atts) }()
	if err != nil {
		return res, 0, err
	}
	rx, err := openReceiver(t)
	if err != nil {
		return res, 0, err
	}
	defer func() { _ = unix.Close(rx) }()
	send, closeSend, err := openSender(t)
	if err != nil {
		return res, 0, err
	}
	defer closeSend()

	base := uint64(time.Now().UnixNano())
	for i := 0; i < cellPackets; i++ {
		token := (base + uint64(i)) | 1 // the mark carrier needs nonzero low bits
		if err := send(trailer(bpf.SurvMagic, token)); err != nil {
			return res, 0, fmt.Errorf("send: %w", err)
		}
	}
	deadline := time.Now().Add(cellWait)
	for {
		res, err = readRes(coll.Maps[bpf.SurvResMap])
		if err != nil {
			return res, 0, err
		}
		received += drain(rx)
		if (res[bpf.ResSeen] >= cellPackets && received >= cellPackets) || time.Now().After(deadline) {
			return res, received, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loadCarrier loads the carrier's writer and reader (and the redirect
// for a path that leaves the writer's device) and configures the path.
func loadCarrier(c carrierDef, t *topology) (*ebpf.Collection, error) {
	spec, err := bpf.Spec(bpf.Survive)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{c.writer: true, c.reader: true}
	if c.xdp && t.mode != bpf.SurvPass {
		keep["surv_redirect"] = true
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if t.mode == bpf.SurvPass {
		return coll, nil
	}
	idx, err := t.writer.ns.Ifindex(t.target)
	if err == nil {
		cfg := bpf.SurvCfg{Mode: t.mode, Ifindex: uint32(idx)}
		if err = coll.Maps[bpf.SurvCfgMap].Put(uint32(0), cfg); err != nil {
			err = fmt.Errorf("cfg: %w", err)
		}
	}
	if err != nil {
		coll.Close()
		return nil, err
	}
	return coll, nil
}

// attachCarrier attaches the writer (XDP or TC), the redirect and the
// reader; the attachments made are returned even on error, to detach.
func attachCarrier(have wire.Caps, c carrierDef, t *topology, coll *ebpf.Collection) ([]attach.Attachment, error) {
	var atts []attach.Attachment
	keep := func(a attach.Attachment, err error) error {
		if err == nil {
			atts = append(atts, a)
		}
		return err
	}
	var err error
	if c.xdp {
		err = keep(attach.XDPGeneric(t.xdp.ns, t.xdp.dev, coll.Programs[c.writer]))
		if err == nil && t.mode != bpf.SurvPass {
			err = keep(attach.TC(t.writer.ns, t.writer.dev, t.writer.dir, coll.Programs["surv_redirect"], have.TCX))
		}
	} else {
		err = keep(attach.TC(t.writer.ns, t.writer.dev, t.writer.dir, coll.Programs[c.writer], have.TCX))
	}
	if err == nil {
		err = keep(attach.TC(t.reader.ns, t.reader.dev, t.reader.dir, coll.Programs[c.reader], have.TCX))
	}
	return atts, err
}

func readRes(m *ebpf.Map) (res [bpf.ResMax]uint64, err error) {
	for k := range res {
		if err := m.Lookup(uint32(k), &res[k]); err != nil {
			return res, fmt.Errorf("res[%d]: %w", k, err)
		}
	}
	return res, nil
}

// openReceiver binds a UDP socket on the destination, so test packets are
// delivered (and counted) rather than answered with ICMP.
func openReceiver(t *topology) (int, error) {
	var fd int
	err := t.dstNS.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("receiver socket: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(t.dst.Port()), Addr: t.dst.Addr().As4()}); err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("bind receiver %s: %w", t.dst, err)
		}
		return nil
	})
	return fd, err
}

// drain reads whatever the receiver has queued.
func drain(fd int) int {
	n := 0
	buf := make([]byte, 256)
	for {
		if _, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT); err != nil {
			return n
		}
		n++
	}
}

// openSender returns a function sending one payload along the path: a
// UDP socket in the sending namespace, or raw frames on rawDev.
func openSender(t *topology) (func([]byte) error, func(), error) {
	if t.rawDev != "" {
		return openRawSender(t)
	}
	var fd int
	err := t.sendNS.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sender socket: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sa := &unix.SockaddrInet4{Port: int(t.dst.Port()), Addr: t.dst.Addr().As4()}
	send := func(p []byte) error { return unix.Sendto(fd, p, 0, sa) }
	return send, func() { _ = unix.Close(fd) }, nil
}

func openRawSender(t *topology) (func([]byte) error, func(), error) {
	l, err := t.sendNS.Link(t.rawDev)
	if err != nil {
		return nil, nil, err
	}
	src := l.Attrs().HardwareAddr
	var fd int
	err = t.sendNS.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sll := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: l.Attrs().Index, Halen: 6}
	copy(sll.Addr[:], t.rawDstHW)
	send := func(p []byte) error {
		f := udpFrame(src, t.rawDstHW, t.rawSrc, t.dst.Addr(), uint16(survPort), t.dst.Port(), p)
		return unix.Sendto(fd, f, 0, sll)
	}
	return send, func() { _ = unix.Close(fd) }, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
