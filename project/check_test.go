package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every kci.yaml mistake names the file, the line and the key, in kci's
// words (not "field bogus not found in type project.File" or "cannot
// unmarshal !!str `three` into int").
func TestParseNamesFileLineAndKey(t *testing.T) {
	const head = "trees:\n  - name: stock\n" // lines 1-2
	for _, tc := range []struct{ yaml, want string }{
		{head + "  - name: gtp\n    bogus: 1\n", `kci.yaml:4: unknown key "bogus" in trees[1] (known: name, series, fragments)`},
		{head + "repz: 3\n", `kci.yaml:3: unknown key "repz" in the top level`},
		{head + "vm:\n  cpus: three\n", `kci.yaml:4: vm.cpus: "three" is not a number`},
		{head + "vm:\n  cpus: 1.5\n", `kci.yaml:4: vm.cpus: 1.5 is not a whole number`},
		{head + "vm:\n  cpus: -4\n", `kci.yaml:4: vm.cpus: -4: want 1 or more`},
		{head + "vm:\n  memory_mib: 10\n", `kci.yaml:4: vm.memory_mib: 10: want 64 or more`},
		{head + "vm:\n  accel: hvf\n", `kci.yaml:4: vm.accel: vm: accelerator "hvf"`},
		{head + "vm:\n  clock: wall\n", `kci.yaml:4: vm.clock:`},
		{head + "vm:\n  pin: x-y\n", `kci.yaml:4: vm.pin:`},
		{head + "bench:\n  variants: [cnt, nosuch]\n", `kci.yaml:4: bench.variants[1]: unknown variant "nosuch" (known: none, cnt, ext, gtp, gtpchurn, gtplru, hash, lru)`},
		{head + "bench:\n  variants: [cnt,\n    cnt]\n", `kci.yaml:5: bench.variants[1]: variant "cnt" named twice`},
		{head + "bench:\n  window: soon\n", `kci.yaml:4: bench.window: "soon" is not a duration`},
		{head + "bench:\n  window: -1s\n", `kci.yaml:4: bench.window: -1s: must not be negative`},
		{head + "bench:\n  emulated_warmup: -500ms\n", `kci.yaml:4: bench.emulated_warmup: -500ms: must not be negative`},
		{head + "bench:\n  rate_mbit: fast\n", `kci.yaml:4: bench.rate_mbit: "fast" is not a number`},
		{head + "bench:\n  pairs: -1\n", `kci.yaml:4: bench.pairs: -1: must not be negative`},
		{head + "bench: [1]\n", `kci.yaml:3: bench: want a mapping`},
		{head + "  - name: x\n    series: patches/x\n", `kci.yaml:4: trees[1].series: want a list`},
		{head + "reps: -1\n", `kci.yaml:3: reps: -1: want 1 or more`},
		{head + "  - name: stock\n", `kci.yaml:3: trees[1].name: tree "stock" defined twice`},
		{head + "vm:\n  cpus: 2\n  cpus: 3\n", `kci.yaml:5:`},
		{"trees: [\n", `kci.yaml:`},
		{"", `kci.yaml: no trees`},
	} {
		_, err := Parse("kci.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
	if _, err := Parse("kci.yaml", []byte(head+"vm:\n  cpus: 2\n  memory_mib: 2048\nbench:\n  variants: [cnt, gtp-gtpchurn]\n  window: 2s\n  rate_mbit: 0.5\n")); err != nil {
		t.Errorf("a valid file refused: %v", err)
	}
}

// A tree's series and fragments are resolved against kci.yaml's directory
// and refused, named, when missing: before any build.
func TestLoadRefusesMissingSeries(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll(filepath.Join(dir, "patches", "ok"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(FileName, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("trees:\n  - name: stock\n  - name: x\n    series: [patches/ok, nosuchdir]\n")
	_, err := Load(t.TempDir())
	want := "kci.yaml:4: trees[1].series[1]: nosuchdir: no such file or directory (" + filepath.Join(dir, "nosuchdir") + ")"
	if err == nil || err.Error() != want {
		t.Errorf("Load: %v\nwant %s", err, want)
	}
	write("trees:\n  - name: x\n    fragments:\n      - nosuch.config\n")
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "kci.yaml:4: trees[0].fragments[0]: nosuch.config: no such file") {
		t.Errorf("Load with a missing fragment: %v", err)
	}
	write("trees:\n  - name: x\n    series: [patches/ok]\n")
	if _, err := Load(t.TempDir()); err != nil {
		t.Errorf("Load with a present series: %v", err)
	}
}
