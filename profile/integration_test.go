package profile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kci-dev/kci/job/jobtest"
	kprofile "github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/vmimage"
	"github.com/kci-dev/kci/wire"
)

// TestProfileHashStockKernel boots the stock kernel (built by kci) under
// TCG with 2 vCPUs, runs the hash variant with the sampler on, and checks
// that the guest's profile shows the BPF map update path and the kernel's
// UDP/loopback path, and that the host renders it.
func TestProfileHashStockKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a kernel in QEMU: skipped in -short mode")
	}
	k := jobtest.Base(t)
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
		defer cancel()
	}
	img, err := vmimage.Build(ctx, vmimage.Options{})
	if err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	plan := wire.Plan{
		Sanity: true, Variants: []string{"hash"}, Profile: true,
		Bench: wire.BenchParams{
			Pairs: 2, PayloadSize: 36, RateMbit: 14,
			ServerLead: time.Second, Warmup: time.Second, Window: 4 * time.Second,
			ServerCPUs: []int{0, 2, 4}, ClientCPUs: []int{1, 3, 5}, SamplerCPU: 6,
		},
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := img.Compose(initrd, vmimage.File{Path: wire.PlanPath[1:], Data: b}); err != nil {
		t.Fatal(err)
	}
	var profs []wire.Profile
	var variant *wire.VariantResult
	res, err := vm.Run(ctx, vm.Config{
		Kernel: k.BzImage, Initrd: initrd, CPUs: 2, MemoryMiB: 1024, Dir: dir, Accel: vm.AccelTCG,
	}, func(ev event.Event) {
		switch ev.Type {
		case event.Profile:
			var p wire.Profile
			if err := ev.Decode(&p); err != nil {
				t.Error(err)
			}
			profs = append(profs, p)
		case event.Variant:
			var v wire.VariantResult
			if err := ev.Decode(&v); err != nil {
				t.Error(err)
			}
			variant = &v
		case event.Log, event.Error:
			t.Logf("guest %s: %s", ev.Type, ev.Data)
		}
	})
	if err != nil {
		if res != nil && res.Console != "" {
			if con, rerr := os.ReadFile(res.Console); rerr == nil {
				t.Logf("console tail:\n%s", tail(string(con), 3000))
			}
		}
		t.Fatalf("guest run: %v", err)
	}
	if variant == nil || variant.Skipped != "" {
		t.Fatalf("hash variant did not run: %+v", variant)
	}
	t.Logf("hash: %.0f pps over %s, valid %v %s", variant.PPS, variant.Window, variant.Valid, variant.Invalid)
	if len(profs) != 1 {
		t.Fatalf("%d profile events, want 1 for the one variant", len(profs))
	}
	g := profs[0]
	if g.Error != "" {
		t.Fatalf("guest sampler failed: %s", g.Error)
	}
	t.Logf("profile: %d samples on CPUs %v at %d Hz over %s, %d dropped", g.Samples, g.CPUs, g.FreqHz, g.Window, g.Dropped)
	if g.Variant != "hash" || g.FreqHz != wire.ProfileFreqHz || len(g.CPUs) == 0 {
		t.Errorf("profile header %+v", g)
	}
	p, err := kprofile.ParseFoldedString(g.Folded)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(p.Total()) != g.Samples {
		t.Errorf("folded stacks hold %d samples, the guest counted %d", p.Total(), g.Samples)
	}
	// 99 samples a second per sampled CPU; TCG timers are coarse, so
	// only ask for half.
	if min := int64(g.Window.Seconds() * 99 * float64(len(g.CPUs)) / 2); p.Total() < min {
		t.Errorf("%d samples over %s on CPUs %v, want at least %d", p.Total(), g.Window, g.CPUs, min)
	}
	syms := kprofile.Symbols(p)
	// has finds a function by name, compiler clones (.constprop.0, .isra.0)
	// included.
	has := func(names ...string) string {
		for sym, s := range syms {
			base, _, _ := strings.Cut(sym, ".")
			for _, n := range names {
				if base == n && s.Total > 0 {
					return sym
				}
			}
		}
		return ""
	}
	var top bytes.Buffer
	kprofile.WriteTopText(&top, kprofile.Top(p, 20), p.Total())
	t.Logf("top symbols:\n%s", top.String())
	if n := has("htab_map_update_elem"); n == "" {
		t.Errorf("no sample in the hash map update path (htab_map_update_elem)")
	} else {
		t.Logf("map update path: %s total %.2f%%", n, syms[n].TotalPct)
	}
	if n := has("udp_sendmsg", "__netif_receive_skb_core", "__dev_queue_xmit", "ip_finish_output2", "net_rx_action", "udp_rcv"); n == "" {
		t.Error("no kernel networking symbol in the profile")
	}
	var bpfSym string
	for n, s := range syms {
		if s.Kind == kprofile.KindBPF && strings.HasSuffix(n, "_hash_write") {
			bpfSym = n
		}
	}
	if bpfSym == "" {
		t.Error("the JIT-compiled hash_write program is not in the profile (bpf_jit_kallsyms?)")
	}

	// Host side: files a run would carry.
	run := t.TempDir()
	w, err := kprofile.NewWriter(run)
	if err != nil {
		t.Fatal(err)
	}
	e, err := w.Add(kprofile.Entry{Tree: "stock", Role: kprofile.RoleBase, Rep: 1, Variant: g.Variant,
		Kernel: k.Release, Accel: string(res.Accel), CPUs: g.CPUs, FreqHz: g.FreqHz, Window: g.Window}, g.Folded)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(20); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(run, kprofile.Dir)
	f, err := os.Open(filepath.Join(pdir, e.Pprof))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pp, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("pprof file does not parse: %v", err)
	}
	var n int64
	for _, s := range pp.Sample {
		n += s.Value[0]
	}
	if n != p.Total() {
		t.Errorf("pprof holds %d samples, want %d", n, p.Total())
	}
	svg, err := os.ReadFile(filepath.Join(pdir, e.SVG))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("htab_map_update_elem")) {
		t.Error("flame graph lacks htab_map_update_elem")
	}
	if out := os.Getenv("KCI_PROFILE_KEEP"); out != "" {
		// Keep the rendered files for a look in a browser.
		for _, name := range []string{e.Folded, e.SVG, e.Pprof} {
			if b, err := os.ReadFile(filepath.Join(pdir, name)); err == nil {
				os.WriteFile(filepath.Join(out, name), b, 0o644)
			}
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
