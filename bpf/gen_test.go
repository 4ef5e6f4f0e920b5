package bpf

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestRegenerate runs every go:generate line of the package into a scratch
// directory and compares the output with the committed files byte for
// byte: the committed objects must be what the C sources compile to.
func TestRegenerate(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("skipped: clang not installed (needed to regenerate the BPF objects)")
	}
	if _, err := exec.LookPath("llvm-strip"); err != nil {
		t.Skip("skipped: llvm-strip not installed (needed to regenerate the BPF objects)")
	}
	lines, err := generateLines("gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(objects()) {
		t.Fatalf("gen.go has %d go:generate lines, want one per object (%d)", len(lines), len(objects()))
	}
	// The objects that are not benchmark variants: the profiler and the
	// context accountant.
	for _, file := range []string{"profile.go", "acct.go"} {
		more, err := generateLines(file)
		if err != nil {
			t.Fatal(err)
		}
		if len(more) != 1 {
			t.Fatalf("%s has %d go:generate lines, want 1", file, len(more))
		}
		lines = append(lines, more...)
	}
	out := t.TempDir()
	for _, args := range lines {
		// go run <pkg> <flags...> <ident> <source>: put -output-dir first.
		if len(args) < 3 || args[0] != "go" || args[1] != "run" {
			t.Fatalf("unexpected go:generate line %q", args)
		}
		cmdArgs := append([]string{"run", args[2], "-output-dir", out}, args[3:]...)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "go", cmdArgs...)
		cmd.Env = append(cleanEnv(), "GOPACKAGE=bpf", "GOFILE=gen.go")
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	generated, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) != 2*len(lines) {
		t.Fatalf("generated %d files, want %d", len(generated), 2*len(lines))
	}
	for _, g := range generated {
		name := filepath.Base(g)
		want, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%s: generated but not committed: %v", name, err)
			continue
		}
		got, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what gen.go produces now; run go generate ./bpf and commit", name)
		}
	}
}

// generateLines returns the go:generate commands of file, split into
// arguments the way go generate does (double quotes group).
func generateLines(file string) ([][]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "//go:generate "); ok {
			out = append(out, splitQuoted(rest))
		}
	}
	return out, sc.Err()
}

func splitQuoted(s string) []string {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, have = !inQuote, true
		case r == ' ' && !inQuote:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

// cleanEnv drops bpf2go's environment overrides so the committed flags
// are the ones that count.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "BPF2GO_") || strings.HasPrefix(kv, "GOPACKAGE=") || strings.HasPrefix(kv, "GOFILE=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func TestSplitQuoted(t *testing.T) {
	got := splitQuoted(`go run x -cflags "-O2 -g" cnt c/cnt.c`)
	want := []string{"go", "run", "x", "-cflags", "-O2 -g", "cnt", "c/cnt.c"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("splitQuoted = %q, want %q", got, want)
	}
}

// objects lists the object names, sorted.
func objects() []string {
	names := make([]string, 0, len(loaders))
	for n := range loaders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
