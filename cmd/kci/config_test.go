package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/kconfig"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/kernel"
)

// kci config on a tree with long paths and the whole drift list prints
// nothing wider than lines.Width and loses no word.
func TestConfigWidth(t *testing.T) {
	prod := kernel.Values{}
	for _, o := range []string{"BPF_JIT_ALWAYS_ON", "SECURITY", "CGROUP_BPF", "NETFILTER", "HZ", "PREEMPT_DYNAMIC"} {
		prod["CONFIG_"+o] = "y"
		prod[o] = "y"
	}
	a := &kernel.Artifacts{
		Fragments: []string{
			"/home/developer/src/kci/configs/kci-base.config",
			"/home/developer/src/kci/configs/bpf-benchmarks-with-btf-and-jit-always-on-and-no-debug.config",
		},
		Config:     "/home/developer/.cache/kci/kernels/6.12.117-tinyconfig-0123456789abcdef0123456789abcdef/.config",
		ConfigHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Drift:      kernel.CompareProduction(kernel.Values{}, prod),
	}
	if len(a.Drift) < 3 {
		t.Fatalf("the case needs drift entries, got %v", a.Drift)
	}
	var b strings.Builder
	if err := writeConfig(&b, "gtp", "tinyconfig", a, "/home/developer/.cache/kci/production/debian-6.12.117-amd64.config"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > lines.Width {
			t.Errorf("%d columns > %d: %s", n, lines.Width, l)
		}
	}
	for _, want := range append([]string{a.Drift[0].Why, a.Fragments[1]}, kconfig.Forbidden...) {
		if want != "" && !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("output lost %q:\n%s", want, out)
		}
	}
}
