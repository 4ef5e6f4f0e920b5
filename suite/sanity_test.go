package suite

import (
	"encoding/binary"
	"strings"
	"testing"
)

const cleanConfig = `#
# Automatically generated file; DO NOT EDIT.
CONFIG_BPF_JIT=y
# CONFIG_LOCKDEP is not set
# CONFIG_PROVE_LOCKING is not set
CONFIG_LOCALVERSION="-kci"
`

func cleanInput() sanityInput {
	return sanityInput{
		Config: []byte(cleanConfig), JITEnable: "1\n", Release: "6.12.117", Version: "Linux version 6.12.117 (kci)\n",
		Notes: gnuNote([]byte{0xde, 0xad, 0xbe, 0xef}), NumCPU: 2,
	}
}

// gnuNote builds /sys/kernel/notes with an unrelated note first.
func gnuNote(id []byte) []byte {
	note := func(name string, typ uint32, desc []byte) []byte {
		pad := func(b []byte) []byte { return append(b, make([]byte, (4-len(b)%4)%4)...) }
		var h [12]byte
		binary.NativeEndian.PutUint32(h[0:], uint32(len(name)+1))
		binary.NativeEndian.PutUint32(h[4:], uint32(len(desc)))
		binary.NativeEndian.PutUint32(h[8:], typ)
		out := append(h[:], pad(append([]byte(name), 0))...)
		return append(out, pad(append([]byte{}, desc...))...)
	}
	return append(note("Xen", 6, []byte{1, 2, 3, 4, 5, 6}), note("GNU", 3, id)...)
}

func TestCheckSanityClean(t *testing.T) {
	s := checkSanity(cleanInput())
	if len(s.Problems) != 0 || s.Lockdep || !s.JIT {
		t.Fatalf("clean kernel: %+v", s)
	}
	if s.BuildID != "deadbeef" || s.Release != "6.12.117" || s.Version != "Linux version 6.12.117 (kci)" || s.NumCPU != 2 {
		t.Errorf("facts: %+v", s)
	}
}

func TestCheckSanityProblems(t *testing.T) {
	cases := []struct {
		name    string
		mod     func(*sanityInput)
		want    string
		lockdep bool
	}{
		{"prove locking", func(in *sanityInput) { in.Config = []byte(cleanConfig + "CONFIG_PROVE_LOCKING=y\nCONFIG_LOCKDEP=y\n") },
			"CONFIG_PROVE_LOCKING=y", true},
		{"lock alloc", func(in *sanityInput) { in.Config = []byte(cleanConfig + "CONFIG_DEBUG_LOCK_ALLOC=y\n") },
			"CONFIG_DEBUG_LOCK_ALLOC=y", true},
		{"kasan", func(in *sanityInput) { in.Config = []byte(cleanConfig + "CONFIG_KASAN=y\n") },
			"CONFIG_KASAN=y", false},
		{"runtime lockdep", func(in *sanityInput) { in.PresentFiles = []string{"/proc/lockdep"} },
			"lockdep active at runtime: /proc/lockdep exists", true},
		{"no config", func(in *sanityInput) { in.Config, in.ConfigErr = nil, errNotExist{} },
			"cannot check the kernel config", false},
		{"jit off", func(in *sanityInput) { in.JITEnable = "0\n" },
			`BPF JIT off (net.core.bpf_jit_enable="0")`, false},
	}
	for _, c := range cases {
		in := cleanInput()
		c.mod(&in)
		s := checkSanity(in)
		if !strings.Contains(strings.Join(s.Problems, "\n"), c.want) {
			t.Errorf("%s: problems %q, want one containing %q", c.name, s.Problems, c.want)
		}
		if s.Lockdep != c.lockdep {
			t.Errorf("%s: lockdep %v, want %v", c.name, s.Lockdep, c.lockdep)
		}
	}
}

type errNotExist struct{}

func (errNotExist) Error() string { return "file does not exist" }

func TestParseConfig(t *testing.T) {
	c := parseConfig([]byte(cleanConfig))
	if c["BPF_JIT"] != "y" || c["LOCKDEP"] != "n" || c["LOCALVERSION"] != "-kci" {
		t.Errorf("parseConfig = %v", c)
	}
}

func TestBuildIDTruncated(t *testing.T) {
	n := gnuNote([]byte{1, 2, 3, 4})
	if id := buildID(n[:len(n)-2]); id != "" {
		t.Errorf("truncated notes gave build id %q", id)
	}
}

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-1": 2, "0-3,5,7-8": 7} {
		if n, err := countCPUList(in); err != nil || n != want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	if _, err := countCPUList("x"); err == nil {
		t.Error("countCPUList(x) did not fail")
	}
}
