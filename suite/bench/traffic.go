package bench

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/suite/netns"
	"github.com/kci-dev/kci/wire"
)

// cpuFor picks the CPU for the i-th thread from the plan's list (the
// default list when empty), folded onto the CPUs the guest has.
func cpuFor(list []int, i int, def []int, ncpu int) int {
	if len(list) == 0 {
		list = def
	}
	if len(list) == 0 || ncpu < 1 {
		return 0
	}
	c := list[i%len(list)]
	if c < 0 {
		c = -c
	}
	return c % ncpu
}

// pairAddr is pair i's server address: 127.1.1.1, 127.2.2.2, ...
func pairAddr(i int) [4]byte {
	b := byte(i%250 + 1)
	return [4]byte{127, b, b, b}
}

const basePort = 31337

// pinThread locks the goroutine to its OS thread and the thread to cpu.
// The goroutine must not unlock: the thread then dies with it, so its
// affinity never leaks to other goroutines.
func pinThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to cpu %d: %w", cpu, err)
	}
	return nil
}

// Real-time priorities of the traffic threads, clients above servers. On
// one CPU the clients send their due packets back to back, every one
// of them, and then the servers read what is queued: the steps and their
// order are the same whatever the scheduler's history, so a code change
// cannot rearrange the traffic (under CFS the wake-up preemptions depend
// on the threads' run times, and any change moved every variant's path by
// up to ±130 ns/pkt). Servers above clients fixed the order too, but with
// one packet in flight at a time: the rhash map never grew past its
// smallest size, and the demo patch, which stops it shrinking, changed
// nothing any more.
const (
	clientPrio = 2
	serverPrio = 1
)

// realtime makes the calling thread SCHED_FIFO at prio.
func realtime(prio uint32) error {
	return setPolicy(0, unix.SCHED_FIFO, prio)
}

func setPolicy(tid int, policy, prio uint32) error {
	attr := unix.SchedAttr{Policy: policy, Priority: prio}
	if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
		return fmt.Errorf("thread %d: policy %d priority %d: %w", tid, policy, prio, err)
	}
	return nil
}

// traffic is the benchmark's UDP load: one server and one client per
// pair, each on its own pinned thread.
type traffic struct {
	params   wire.BenchParams
	ncpu     int
	srvFDs   []int
	cliFDs   []int
	flushNS  *netns.NS // no programs: what flushDeferred sends is nobody's packet
	flushFDs []int     // per pair: a socket there connected to itself
	received []atomic.Uint64
	sent     []atomic.Uint64
	srvStop  atomic.Bool
	cliStop  atomic.Bool
	srvWG    sync.WaitGroup
	cliWG    sync.WaitGroup
	mu       sync.Mutex
	errs     []error
	tids     []int // the pinned threads, for the accountant
}

// ppsPerPair is the planned packet rate of one client: the rate counts
// payload bytes (14 Mbit/s of 36-byte datagrams ≈ 48.6k pps).
func ppsPerPair(p wire.BenchParams) float64 {
	if p.PayloadSize <= 0 {
		return 0
	}
	return p.RateMbit * 1e6 / 8 / float64(p.PayloadSize)
}

// newTraffic opens the sockets inside ns (they stay bound to it whatever
// thread later uses them).
func newTraffic(ns *netns.NS, p wire.BenchParams, ncpu int) (*traffic, error) {
	if p.Pairs < 1 {
		return nil, fmt.Errorf("bench: %d pairs", p.Pairs)
	}
	t := &traffic{params: p, ncpu: ncpu, received: make([]atomic.Uint64, p.Pairs), sent: make([]atomic.Uint64, p.Pairs)}
	err := ns.Do(func() error {
		for i := 0; i < p.Pairs; i++ {
			sa := &unix.SockaddrInet4{Port: basePort + i, Addr: pairAddr(i)}
			s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("server socket: %w", err)
			}
			// No receive timeout: it armed and cancelled a timer-wheel
			// timer on every blocking read, whose cost depends on how
			// long the CPU idled; stopServers wakes the readers instead.
			t.srvFDs = append(t.srvFDs, s)
			if err := unix.Bind(s, sa); err != nil {
				return fmt.Errorf("bind %v:%d: %w", sa.Addr, sa.Port, err)
			}
			c, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("client socket: %w", err)
			}
			t.cliFDs = append(t.cliFDs, c)
			if err := unix.Connect(c, sa); err != nil {
				return fmt.Errorf("connect %v:%d: %w", sa.Addr, sa.Port, err)
			}
		}
		return nil
	})
	if err == nil {
		err = t.openFlush(p.Pairs)
	}
	if err != nil {
		_ = t.close()
		return nil, fmt.Errorf("bench traffic: %w", err)
	}
	return t, nil
}

// openFlush makes the flush sockets, in a namespace of their own.
func (t *traffic) openFlush(pairs int) error {
	fns, err := netns.New("kci-flush")
	if err != nil {
		return err
	}
	t.flushNS = fns
	return fns.Do(func() error {
		for i := 0; i < pairs; i++ {
			f, err := selfSocket(&unix.SockaddrInet4{Port: basePort + i, Addr: [4]byte{127, 0, 0, 1}})
			if f >= 0 {
				t.flushFDs = append(t.flushFDs, f)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// started records a pinned thread.
func (t *traffic) started() {
	t.mu.Lock()
	t.tids = append(t.tids, unix.Gettid())
	t.mu.Unlock()
}

// threads are the pinned threads started so far.
func (t *traffic) threads() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]int(nil), t.tids...)
}

func (t *traffic) fail(err error) {
	t.mu.Lock()
	t.errs = append(t.errs, err)
	t.mu.Unlock()
}

func (t *traffic) startServers() {
	for i, fd := range t.srvFDs {
		cpu := cpuFor(t.params.ServerCPUs, i, wire.DefaultBench().ServerCPUs, t.ncpu)
		t.srvWG.Add(1)
		go func() {
			defer t.srvWG.Done()
			if err := pinThread(cpu); err != nil {
				t.fail(err)
			}
			if err := realtime(serverPrio); err != nil {
				t.fail(fmt.Errorf("server %d: %w", i, err))
			}
			t.started()
			buf := make([]byte, 2048)
			// The loop calls only what cannot be preempted (rawsys.go).
			for !t.srvStop.Load() {
				// read, not recvfrom: no sender address to allocate.
				n, errno := rawRead(fd, buf)
				switch {
				case errno == 0 && n > 0:
					t.received[i].Add(1)
				case errno == 0, errno == unix.EAGAIN, errno == unix.EINTR:
					// 0 bytes: stopServers shut the socket down.
				default:
					t.fail(fmt.Errorf("server %d: recv: %w", i, errno))
					return
				}
			}
		}()
	}
}

func (t *traffic) startClients() {
	pps := ppsPerPair(t.params)
	start := nextTick(rawMono())
	for i, fd := range t.cliFDs {
		cpu := cpuFor(t.params.ClientCPUs, i, wire.DefaultBench().ClientCPUs, t.ncpu)
		t.cliWG.Add(1)
		go func() {
			defer t.cliWG.Done()
			if err := pinThread(cpu); err != nil {
				t.fail(err)
			}
			if err := realtime(clientPrio); err != nil {
				t.fail(fmt.Errorf("client %d: %w", i, err))
			}
			t.started()
			// Exact wake-ups: the default 50 µs slack would let the
			// kernel fire each client's timer at its own moment.
			if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
				t.fail(fmt.Errorf("client %d: timer slack: %w", i, err))
			}
			t.send(i, fd, start, pps)
		}()
	}
}

// send is one client's loop. Every client sleeps to the same 1 ms grid
// of the monotonic clock, which the guest's tick (HZ 250) also sits on,
// so all their timers and the tick expire in one interrupt while the
// CPU is idle, never inside another client's programs; the clients then
// send their due packets back to back, as bursts from three senders.
func (t *traffic) send(i, fd int, start time.Duration, pps float64) {
	payload := make([]byte, max(t.params.PayloadSize, 1))
	// Catch up after a late wake-up by at most 50 ms of packets: a longer
	// hole is a stall the series should show, not hide.
	maxBurst := uint64(max(1, pps/20))
	var sent uint64
	// The loop calls only what cannot be preempted (rawsys.go).
	for !t.cliStop.Load() {
		now := rawMono()
		due := uint64(max(0, float64(now-start)/1e9) * pps)
		if due > sent+maxBurst {
			sent = due - maxBurst
		}
		for ; sent < due; sent++ {
			switch errno := rawWrite(fd, payload); errno {
			case 0:
				t.sent[i].Add(1)
			case unix.ECONNREFUSED, unix.ENOBUFS, unix.EAGAIN:
			default:
				t.fail(fmt.Errorf("client %d: send: %w", i, errno))
				return
			}
		}
		rawSleepUntil(nextTick(rawMono()))
	}
}

// paceTick is the clients' common wake-up grid.
const paceTick = time.Millisecond

// nextTick is the first grid point after now.
//
//go:nosplit
func nextTick(now time.Duration) time.Duration {
	return (now/paceTick + 1) * paceTick
}

// totalReceived sums the servers' counters.
func (t *traffic) totalReceived() uint64 {
	var n uint64
	for i := range t.received {
		n += t.received[i].Load()
	}
	return n
}

func (t *traffic) stopClients() {
	t.cliStop.Store(true)
	t.cliWG.Wait()
}

// stopServers wakes every server blocked in read (shutdown makes it
// return 0) and waits for them.
func (t *traffic) stopServers() {
	t.srvStop.Store(true)
	for _, fd := range t.srvFDs {
		_ = unix.Shutdown(fd, unix.SHUT_RD) // ENOTCONN after close: nobody waits then
	}
	t.srvWG.Wait()
}

// close stops everything and closes the sockets; queued datagrams are
// freed with them, which the map variants' reapers count.
func (t *traffic) close() error {
	t.stopClients()
	t.stopServers()
	for _, fd := range slices.Concat(t.cliFDs, t.srvFDs, t.flushFDs) {
		_ = unix.Close(fd)
	}
	t.cliFDs, t.srvFDs, t.flushFDs = nil, nil, nil
	if t.flushNS != nil {
		t.flushNS.Close()
		t.flushNS = nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.errs...)
}

// selfSocket opens a UDP socket bound to sa and connected to itself, with
// a receive timeout: what it sends, it reads back on the same CPU.
func selfSocket(sa *unix.SockaddrInet4) (int, error) {
	f, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("flush socket: %w", err)
	}
	tv := unix.NsecToTimeval(time.Second.Nanoseconds())
	if err := unix.SetsockoptTimeval(f, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return f, fmt.Errorf("flush socket: receive timeout: %w", err)
	}
	if err := unix.Bind(f, sa); err != nil {
		return f, fmt.Errorf("flush socket: bind %v:%d: %w", sa.Addr, sa.Port, err)
	}
	if err := unix.Connect(f, sa); err != nil {
		return f, fmt.Errorf("flush socket: connect %v:%d: %w", sa.Addr, sa.Port, err)
	}
	return f, nil
}

// flushDeferred makes each client's CPU free the skbs handed back to it.
// Since v6.18 (upstream 6471658dc66c, patches/udp-defer-free.patch on
// 6.12) a datagram recvmsg consumed is freed by the CPU that allocated it
// (over lo, the client's), at that CPU's next NET_RX softirq; with the
// clients stopped, an idle client CPU would keep up to
// net.core.skb_defer_max of them unfreed, and unreaped, while the
// counters are read. A datagram the client's CPU sends itself runs that
// softirq there first (the defer lists are per CPU, not per namespace),
// and is then read, and freed, on the same CPU. It goes over another
// namespace's lo, where no program counts it, and no map holds its skb.
func (t *traffic) flushDeferred() error {
	errs := make([]error, len(t.flushFDs))
	var wg sync.WaitGroup
	for i, fd := range t.flushFDs {
		cpu := cpuFor(t.params.ClientCPUs, i, wire.DefaultBench().ClientCPUs, t.ncpu)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pinThread(cpu); err != nil {
				errs[i] = err
				return
			}
			buf := []byte{0}
			if _, err := unix.Write(fd, buf); err != nil {
				errs[i] = fmt.Errorf("flush on cpu %d: send: %w", cpu, err)
			} else if _, err := unix.Read(fd, buf); err != nil {
				errs[i] = fmt.Errorf("flush on cpu %d: read back: %w", cpu, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
