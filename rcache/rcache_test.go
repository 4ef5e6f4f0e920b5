package rcache

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testKey() Key {
	return Key{Kernel: "k1 bid1 sha1", Release: "6.12.0-kci", QEMU: "QEMU emulator version 7.2.15", Image: "img1",
		Plan: `{"variants":["hash"]}`, Guest: "cpus=1 memory=1024MiB", Clock: "tcg/icount", Seed: 3}
}

// Every component of the key changes the ID: a field left out of the hash
// would serve one kernel's (or QEMU's, or seed's) numbers for another.
func TestKeyIDChangesWithEveryComponent(t *testing.T) {
	base := testKey()
	id := base.ID()
	if base.ID() != id {
		t.Fatal("ID is not stable")
	}
	v := reflect.ValueOf(&base).Elem()
	for i := 0; i < v.NumField(); i++ {
		k := base
		f := reflect.ValueOf(&k).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		default:
			t.Fatalf("field %s: kind %s not covered", v.Type().Field(i).Name, f.Kind())
		}
		if k.ID() == id {
			t.Errorf("changing %s leaves the ID %s", v.Type().Field(i).Name, id)
		}
	}
	// Moving text between fields is another key too.
	a, b := base, base
	a.QEMU, a.Image = "ab", "c"
	b.QEMU, b.Image = "a", "bc"
	if a.ID() == b.ID() {
		t.Error("field boundaries are not hashed")
	}
}

func TestOpenCreatesTheCacheOnABrandNewMachine(t *testing.T) {
	root := filepath.Join(t.TempDir(), "no", "such", "kci")
	s, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		t.Fatalf("%s not created: %v", s.Dir, err)
	}
	if _, err := Open("", nil); err == nil {
		t.Error("Open of no root succeeded")
	}
}

type payload struct {
	NsPerPkt float64 `json:"ns_per_pkt"`
}

func TestSaveLoadRoundTrip(t *testing.T) {
	s, _ := Open(t.TempDir(), nil)
	k := testKey()
	if _, ok := s.Load(k); ok {
		t.Fatal("hit in an empty cache")
	}
	if err := s.Save(k, payload{523.25}, "console text\n"); err != nil {
		t.Fatal(err)
	}
	h, ok := s.Load(k)
	if !ok {
		t.Fatal("miss after Save")
	}
	var p payload
	if err := json.Unmarshal(h.Payload, &p); err != nil || p.NsPerPkt != 523.25 {
		t.Errorf("payload %s (%v)", h.Payload, err)
	}
	if h.Console != "console text\n" || h.Key != k || h.ID != k.ID() {
		t.Errorf("hit %+v", h)
	}
	other := k
	other.Seed++
	if _, ok := s.Load(other); ok {
		t.Error("another seed hit")
	}
	tmps, _ := filepath.Glob(filepath.Join(s.Dir, ".tmp-*"))
	if len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// A corrupt entry is dropped with a warning naming it, never served, and
// the next Save replaces it.
func TestCorruptEntriesAreDroppedWithAWarning(t *testing.T) {
	k := testKey()
	cases := map[string]func(b []byte) []byte{
		"truncated":      func(b []byte) []byte { return b[:len(b)/2] },
		"empty":          func([]byte) []byte { return nil },
		"payload edited": func(b []byte) []byte { return bytes.Replace(b, []byte("523.25"), []byte("423.25"), 1) },
		"key edited":     func(b []byte) []byte { return bytes.Replace(b, []byte(`"seed":3`), []byte(`"seed":4`), 1) },
		"other format":   func(b []byte) []byte { return bytes.Replace(b, []byte(`"format":1`), []byte(`"format":9`), 1) },
		"not an object":  func(b []byte) []byte { return []byte(`[1,2]`) },
		"payload array": func(b []byte) []byte {
			var e map[string]any
			_ = json.Unmarshal(b, &e)
			e["payload"] = []int{1}
			e["sum"] = sum([]byte("[1]"))
			out, _ := json.Marshal(e)
			return out
		},
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			var warn bytes.Buffer
			s, _ := Open(t.TempDir(), &warn)
			if err := s.Save(k, payload{523.25}, ""); err != nil {
				t.Fatal(err)
			}
			p := s.path(k.ID())
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, corrupt(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if h, ok := s.Load(k); ok {
				t.Fatalf("corrupt entry served: %s", h.Payload)
			}
			if !strings.Contains(warn.String(), "dropping entry "+k.ID()) {
				t.Errorf("warning %q does not name the entry", warn.String())
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("corrupt entry still on disk: %v", err)
			}
			if err := s.Save(k, payload{1}, ""); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Load(k); !ok {
				t.Error("no hit after saving over a dropped entry")
			}
		})
	}
}

// An entry copied under another key's name is refused: the name is the
// key's hash.
func TestEntryUnderAnotherNameIsRefused(t *testing.T) {
	var warn bytes.Buffer
	s, _ := Open(t.TempDir(), &warn)
	a, b := testKey(), testKey()
	b.Seed = 4
	if err := s.Save(a, payload{1}, ""); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(s.path(a.ID()))
	if err := os.WriteFile(s.path(b.ID()), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Load(b); ok {
		t.Fatal("seed 3's entry served for seed 4")
	}
	if !strings.Contains(warn.String(), "names id") {
		t.Errorf("warning %q", warn.String())
	}
}

func TestListPruneClear(t *testing.T) {
	s, _ := Open(t.TempDir(), nil)
	old, fresh := testKey(), testKey()
	fresh.Seed = 9
	for _, k := range []Key{old, fresh} {
		if err := s.Save(k, payload{1}, ""); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(s.path(old.ID()), long, long); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "deadbeef.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 3 {
		t.Fatalf("List: %d entries, %v", len(list), err)
	}
	bad := 0
	for _, in := range list {
		if in.Bad != "" {
			bad++
		} else if in.Key.Release != "6.12.0-kci" {
			t.Errorf("entry %s: key %+v", in.ID, in.Key)
		}
	}
	if bad != 1 {
		t.Errorf("%d corrupt entries listed, want 1", bad)
	}
	n, _, err := s.Prune(time.Now().Add(-24 * time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("Prune removed %d (%v), want the old and the corrupt one", n, err)
	}
	if _, ok := s.Load(fresh); !ok {
		t.Error("Prune removed the fresh entry")
	}
	if _, ok := s.Load(old); ok {
		t.Error("Prune kept the old entry")
	}
	if n, _, err := s.Clear(); err != nil || n != 1 {
		t.Errorf("Clear removed %d (%v), want 1", n, err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("%d entries after Clear", len(list))
	}
}
