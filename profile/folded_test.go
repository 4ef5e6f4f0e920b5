package profile

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func loadTestdata(t *testing.T, name string) *Profile {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := ParseFolded(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFolded(t *testing.T) {
	in := "# comment\n\na;b;c 3\r\na;b 2\na;b;c 4\nx 0\n"
	p, err := ParseFoldedString(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Stacks) != 3 {
		t.Fatalf("stacks = %+v, want 3 (a;b;c merged)", p.Stacks)
	}
	if got := p.Stacks[0]; strings.Join(got.Frames, "|") != "a|b|c" || got.Count != 7 {
		t.Errorf("first stack = %+v, want a|b|c 7", got)
	}
	if p.Total() != 9 {
		t.Errorf("total = %d, want 9", p.Total())
	}
}

func TestParseFoldedErrors(t *testing.T) {
	for _, in := range []string{
		"a;b\n",     // no count
		"a;b x\n",   // count not a number
		"a;b -1\n",  // negative
		" 5\n",      // no frames
		"a;;b 1\n",  // empty frame
		"a;b 1.5\n", // not an integer
	} {
		if _, err := ParseFoldedString(in); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestWriteFoldedRoundTrip(t *testing.T) {
	p := loadTestdata(t, "hash.folded")
	var b bytes.Buffer
	if err := p.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	q, err := ParseFolded(&b)
	if err != nil {
		t.Fatal(err)
	}
	if q.Total() != p.Total() || len(q.Stacks) != len(p.Stacks) {
		t.Fatalf("round trip: %d stacks %d samples, want %d %d", len(q.Stacks), q.Total(), len(p.Stacks), p.Total())
	}
	var again bytes.Buffer
	q.WriteFolded(&again)
	var first bytes.Buffer
	p.WriteFolded(&first)
	if first.String() != again.String() {
		t.Error("WriteFolded is not stable")
	}
}

func TestMerge(t *testing.T) {
	a, _ := ParseFoldedString("t;f 2\nt;g 1\n")
	a.FreqHz = 99
	b, _ := ParseFoldedString("t;f 3\nt;h 5\n")
	b.FreqHz = 99
	m := Merge(a, b)
	if m.Total() != 11 || len(m.Stacks) != 3 || m.FreqHz != 99 {
		t.Fatalf("merge = %+v, want 3 stacks, 11 samples, 99 Hz", m)
	}
	a.Stacks[0].Frames[1] = "changed"
	if m.Stacks[0].Frames[1] != "f" {
		t.Error("Merge shares frame slices with its inputs")
	}
	b.FreqHz = 999
	if Merge(a, b).FreqHz != 0 {
		t.Error("rates differ: want FreqHz 0")
	}
}

func TestFrameKind(t *testing.T) {
	for _, c := range []struct {
		name  string
		depth int
		want  Kind
	}{
		{"kci-guest", 0, KindTask},
		{"htab_map_update_elem", 0, KindTask},
		{"htab_map_update_elem", 3, KindKernel},
		{"bpf_prog_1a2b3c4d5e6f7a8b_hash_write", 5, KindBPF},
		{"bpf_trampoline_6442491362", 5, KindBPF},
		{"bpf_map_update_elem", 5, KindKernel},
		{"[user]", 1, KindUser},
		{"[lost]", 1, KindUnknown},
	} {
		if got := FrameKind(c.name, c.depth); got != c.want {
			t.Errorf("FrameKind(%q, %d) = %v, want %v", c.name, c.depth, got, c.want)
		}
	}
}
