package profile

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/wire"
)

const kallsymsSample = `ffffffff81000000 T _stext
ffffffff81000ff0 t __pfx_do_one_initcall
ffffffff81001000 T __softirqentry_text_end
ffffffff81001000 t do_one_initcall
ffffffff81001000 T __irqentry_text_start
ffffffff81002000 D some_data
ffffffff81003000 T __netif_receive_skb_core
ffffffff81004000 W weak_fn
ffffffffa0000000 t bpf_prog_6deef7357e7b4530_hash_write	[bpf]
`

func TestParseKallsyms(t *testing.T) {
	k, err := parseKallsyms(strings.NewReader(kallsymsSample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff80ffffff, wire.FrameUnknown},
		{0xffffffff81000000, "_stext"}, // the only name there
		{0xffffffff81000ff4, "__pfx_do_one_initcall"},
		{0xffffffff81001abc, "do_one_initcall"},
		{0xffffffff81002010, "do_one_initcall"}, // data symbols are not functions
		{0xffffffff81003fff, "__netif_receive_skb_core"},
		{0xffffffff81004001, "weak_fn"},
		{0xffffffffa0000040, "bpf_prog_6deef7357e7b4530_hash_write"},
	} {
		if got := k.lookup(c.addr); got != c.want {
			t.Errorf("lookup(%#x) = %q, want %q", c.addr, got, c.want)
		}
	}
}

func TestParseKallsymsHidden(t *testing.T) {
	hidden := "0000000000000000 T _stext\n0000000000000000 t foo\n"
	if _, err := parseKallsyms(strings.NewReader(hidden)); !errors.Is(err, errKptrRestricted) {
		t.Fatalf("err = %v, want errKptrRestricted", err)
	}
	if _, err := parseKallsyms(strings.NewReader("ffff0000 D data_only\n")); err == nil {
		t.Fatal("no text symbols: want an error")
	}
}

func TestFoldStacks(t *testing.T) {
	k, err := parseKallsyms(strings.NewReader(kallsymsSample))
	if err != nil {
		t.Fatal(err)
	}
	stacks := map[int32][]uint64{
		// leaf first, zero padded, as the stack-trace map returns them
		1: {0xffffffffa0000010, 0xffffffff81003010, 0xffffffff81001000, 0, 0},
		// same functions at other offsets: must merge with stack 1
		2: {0xffffffffa0000020, 0xffffffff81003020, 0xffffffff81001004, 0},
		3: {0xffffffff81003000},
	}
	counts := []stackCount{
		{comm: "kci-guest", kstack: 1, n: 5},
		{comm: "kci-guest", kstack: 2, n: 2},
		{comm: "ksoftirqd/0", kstack: 3, n: 4},
		{comm: "kci-guest", kstack: -int32(unix.EFAULT), n: 3},
		{comm: "kci-guest", kstack: -int32(unix.EEXIST), n: 1},
		{comm: "kci-guest", kstack: -int32(unix.ENOMEM), n: 2},
		{comm: "with space", kstack: 3, n: 1},
	}
	got, total := foldStacks(counts, stacks, k)
	want := "kci-guest;[lost] 1\n" +
		"kci-guest;[no_stack_ENOMEM] 2\n" +
		"kci-guest;[user] 3\n" +
		"kci-guest;do_one_initcall;__netif_receive_skb_core;bpf_prog_6deef7357e7b4530_hash_write 7\n" +
		"ksoftirqd/0;__netif_receive_skb_core 4\n" +
		"with_space;__netif_receive_skb_core 1\n"
	if got != want {
		t.Errorf("folded:\n%s\nwant:\n%s", got, want)
	}
	if total != 18 {
		t.Errorf("total = %d, want 18", total)
	}
}

func TestCPUClockAttr(t *testing.T) {
	a := cpuClockAttr(99)
	if a.Type != unix.PERF_TYPE_SOFTWARE || a.Config != unix.PERF_COUNT_SW_CPU_CLOCK {
		t.Errorf("event %d/%d, want software cpu-clock", a.Type, a.Config)
	}
	if a.Sample != 99 || a.Bits&unix.PerfBitFreq == 0 {
		t.Errorf("sample %d bits %#x: want a frequency of 99 Hz", a.Sample, a.Bits)
	}
	if a.Bits&unix.PerfBitDisabled == 0 {
		t.Error("created enabled: CPUs would start sampling one by one")
	}
}

// TestProfileHost runs the real sampler on the machine running the test,
// when it lets us load BPF: busy work on this CPU must show up.
func TestProfileHost(t *testing.T) {
	if testing.Short() {
		t.Skip("loads BPF into the running kernel: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF, CAP_PERFMON) to load the sampler")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu, err := currentCPU()
	if err != nil {
		t.Skip(err)
	}
	p, err := Start([]int{cpu}, 997)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("this kernel refuses the sampler: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Make system calls on the sampled CPU for a while.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		unix.Getppid()
		os.ReadFile("/proc/self/stat")
	}
	st, folded, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples in %s, %d dropped; %d folded lines", st.Samples, st.Elapsed, st.Dropped, strings.Count(folded, "\n"))
	t.Logf("folded (head):\n%s", head(folded, 8))
	if st.Samples == 0 || folded == "" {
		t.Fatal("no samples")
	}
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		if i := strings.LastIndexByte(l, ' '); i < 0 || strings.ContainsAny(l[:i], " \t") {
			t.Fatalf("malformed folded line %q", l)
		}
	}
	if !strings.Contains(folded, "profile.test;") {
		t.Errorf("no sample of the test process itself:\n%s", head(folded, 20))
	}
}

// currentCPU pins the test's thread to the CPU it runs on.
func currentCPU() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, err
	}
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			var one unix.CPUSet
			one.Set(c)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				return 0, err
			}
			return c, nil
		}
	}
	return 0, errors.New("no CPU in the affinity mask")
}

func head(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}
