package boot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/rcache"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vmimage"
	"github.com/kci-dev/kci/wire"
)

// An entry whose payload is no boot of this format is dropped, not served.
func TestCorruptPayloadIsDropped(t *testing.T) {
	var warn bytes.Buffer
	store, _ := rcache.Open(t.TempDir(), &warn)
	k := rcache.Key{Kernel: "base-stock", Seed: 1}
	for _, p := range []any{map[string]any{"format": 99, "result": map[string]any{}}, map[string]any{"format": bootCacheFormat, "bogus": 1},
		map[string]any{"format": bootCacheFormat, "result": map[string]any{"ErrorKind": "crash"}}} {
		warn.Reset()
		if err := store.Save(k, p, ""); err != nil {
			t.Fatal(err)
		}
		c := &cachedBooter{store: store}
		if _, ok := c.load(k); ok {
			t.Errorf("payload %v served", p)
		}
		if !strings.Contains(warn.String(), "corrupt payload") {
			t.Errorf("payload %v: warning %q", p, warn.String())
		}
	}
}

// VMBooter's key: exact only under TCG icount with one vCPU and no
// profile or command, and every part (kernel file, QEMU, image, plan,
// guest size, seed) changes it.
func TestVMBooterCacheKey(t *testing.T) {
	dir := t.TempDir()
	bz := filepath.Join(dir, "bzImage")
	if err := os.WriteFile(bz, []byte("kernel one"), 0o644); err != nil {
		t.Fatal(err)
	}
	newBooter := func(c vm.Config) *VMBooter {
		b := &VMBooter{VM: c, qemu: "QEMU emulator version 7.2.15"}
		b.img = &vmimage.Image{Key: "img1"}
		return b
	}
	icount := vm.Config{Accel: vm.AccelTCG, Clock: vm.ClockICount, CPUs: 1, MemoryMiB: 1024}
	req := BootRequest{Kernel: &kernel.Artifacts{Key: "k", BuildID: "b", BzImage: bz, Release: "6.12"}, Seed: 2,
		Plan: wire.Plan{Variants: []string{"hash"}, Bench: wire.DefaultBench()}}
	ctx := context.Background()
	key, exact, err := newBooter(icount).CacheKey(ctx, req)
	if err != nil || !exact {
		t.Fatalf("icount boot: exact %v, %v", exact, err)
	}
	for _, want := range []string{"nokaslr", "no_timer_check", "noapictimer", "rr=record", "-m 1024", "-smp 1", "-cpu max"} {
		if !strings.Contains(key.Guest, want) {
			t.Errorf("key's machine %q lacks %q", key.Guest, want)
		}
	}
	inexact := map[string]func() (*VMBooter, BootRequest){
		"kvm": func() (*VMBooter, BootRequest) {
			c := icount
			c.Accel = vm.AccelKVM
			return newBooter(c), req
		},
		"host": func() (*VMBooter, BootRequest) {
			c := icount
			c.Clock = vm.ClockHost
			return newBooter(c), req
		},
		"interactive": func() (*VMBooter, BootRequest) { c := icount; c.Interactive = true; return newBooter(c), req },
		"profile": func() (*VMBooter, BootRequest) {
			r := req
			r.Plan.Profile = true
			return newBooter(icount), r
		},
		"command": func() (*VMBooter, BootRequest) {
			r := req
			r.Plan.Command = []string{"true"}
			return newBooter(icount), r
		},
	}
	for name, f := range inexact {
		b, r := f()
		if _, exact, err := b.CacheKey(ctx, r); exact || err != nil {
			t.Errorf("%s: exact %v (%v), want a boot that bypasses the cache", name, exact, err)
		}
	}
	changed := map[string]func() (*VMBooter, BootRequest){
		"seed":   func() (*VMBooter, BootRequest) { r := req; r.Seed = 3; return newBooter(icount), r },
		"memory": func() (*VMBooter, BootRequest) { c := icount; c.MemoryMiB = 2048; return newBooter(c), req },
		// Several vCPUs are exact by construction (vm.Repeatable): cached,
		// under another key.
		"smp": func() (*VMBooter, BootRequest) { c := icount; c.CPUs = 2; return newBooter(c), req },
		"qemu": func() (*VMBooter, BootRequest) {
			b := newBooter(icount)
			b.qemu = "QEMU emulator version 8.0"
			return b, req
		},
		"image": func() (*VMBooter, BootRequest) {
			b := &VMBooter{VM: icount, qemu: "QEMU emulator version 7.2.15"}
			b.img = &vmimage.Image{Key: "img2"}
			return b, req
		},
		"plan": func() (*VMBooter, BootRequest) {
			r := req
			r.Plan.Bench.Pairs = 1
			return newBooter(icount), r
		},
		"build": func() (*VMBooter, BootRequest) {
			r := req
			k := *r.Kernel
			k.BuildID = "b2"
			r.Kernel = &k
			return newBooter(icount), r
		},
		"cmdline": func() (*VMBooter, BootRequest) {
			c := icount
			c.Append = []string{"quiet"}
			return newBooter(c), req
		},
		"cpu": func() (*VMBooter, BootRequest) {
			c := icount
			c.CPUModel = "Haswell"
			return newBooter(c), req
		},
		"bzImage": func() (*VMBooter, BootRequest) {
			bz2 := filepath.Join(dir, "bzImage2")
			_ = os.WriteFile(bz2, []byte("kernel two"), 0o644)
			r := req
			k := *r.Kernel
			k.BzImage = bz2
			r.Kernel = &k
			return newBooter(icount), r
		},
	}
	for name, f := range changed {
		b, r := f()
		k2, exact, err := b.CacheKey(ctx, r)
		if err != nil || !exact {
			t.Errorf("%s: exact %v, %v", name, exact, err)
		} else if k2.ID() == key.ID() {
			t.Errorf("changing the %s leaves the key %s", name, key.ID())
		}
	}
}

func TestUnfencedNote(t *testing.T) {
	fenced, unfenced := &BootResult{MainLoop: "fenced on host CPU 1"}, &BootResult{MainLoop: "not fenced: no privilege"}
	if n := unfencedNote(fenced, fenced); n != "" {
		t.Errorf("both fenced: %q", n)
	}
	if n := unfencedNote(&BootResult{}, &BootResult{}); n != "" {
		t.Errorf("one vCPU (no record): %q", n)
	}
	if n := unfencedNote(fenced, unfenced); !strings.Contains(n, "unfenced in this one,") {
		t.Errorf("this boot unfenced: %q", n)
	}
	if n := unfencedNote(unfenced, unfenced); !strings.Contains(n, "the cached boot and this one") {
		t.Errorf("both unfenced: %q", n)
	}
}
