// Package rcache is kci's result cache: what a deterministic boot
// measured, stored under everything its numbers are a function of.
//
// Under TCG with the instruction clock and record/replay, a boot's numbers
// depend only on the kernel build, the QEMU build, the initramfs (u-root
// and agent), the plan and its traffic, the guest's size and the guest
// seed. A second boot with the same Key measures nothing new, so a later
// run reuses the entry instead. KVM and host-clock boots never get a Key.
//
// Entries live in <kci cache>/results/<id>.json, published by atomic
// rename. They are read as untrusted: an entry that does not parse, does
// not hash to its own name or carries a payload that does not match its
// checksum is removed with a warning, never used.
package rcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/keyhash"
)

// Format is the entry format; entries of another format are dropped.
const Format = 1

// Key is everything a deterministic boot's numbers are a function of.
// Every field goes into ID: a field added here changes every key.
type Key struct {
	Kernel  string `json:"kernel"`  // kernel build: cache key, build id, bzImage hash
	Release string `json:"release"` // uname -r, for the listing (a function of Kernel)
	QEMU    string `json:"qemu"`    // the QEMU build (its --version line)
	Image   string `json:"image"`   // initramfs key: u-root layer + agent
	Plan    string `json:"plan"`    // the plan as the guest gets it (variants, traffic, survival)
	Guest   string `json:"guest"`   // vCPUs, memory, CPU model, command line
	Clock   string `json:"clock"`   // accelerator and clock mode: only tcg/icount is exact
	Seed    uint64 `json:"seed"`    // the guest's random seed
}

// ID is the key's hash, the entry's file name.
func (k Key) ID() string {
	v := reflect.ValueOf(k)
	parts := []string{"rcache/v1"}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		s := ""
		switch f.Kind() {
		case reflect.String:
			s = f.String()
		case reflect.Uint64:
			s = strconv.FormatUint(f.Uint(), 10)
		default:
			panic("rcache: Key field " + v.Type().Field(i).Name + " is not hashed")
		}
		parts = append(parts, v.Type().Field(i).Name+"="+s)
	}
	return keyhash.Strings(parts...)[:32]
}

// entry is one file of the cache.
type entry struct {
	Format  int             `json:"format"`
	ID      string          `json:"id"`
	Key     Key             `json:"key"`
	Stored  time.Time       `json:"stored"`
	Sum     string          `json:"sum"` // sha256 of Payload
	Payload json.RawMessage `json:"payload"`
	Console string          `json:"console,omitempty"` // the boot's console log
}

// Store is the cache directory.
type Store struct {
	Dir string
	// Warn receives the warnings (corrupt entries dropped); nil discards.
	Warn io.Writer
}

// Open opens (creating) <root>/results: on a brand-new machine neither
// it nor root exists yet.
func Open(root string, warn io.Writer) (*Store, error) {
	if root == "" {
		return nil, errors.New("rcache: no cache root")
	}
	d := filepath.Join(root, cachedir.Results)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, fmt.Errorf("rcache: %w", err)
	}
	return &Store{Dir: d, Warn: warn}, nil
}

func (s *Store) path(id string) string { return filepath.Join(s.Dir, id+".json") }

func (s *Store) warnf(format string, a ...any) {
	if s.Warn != nil {
		fmt.Fprintf(s.Warn, "kci: warning: result cache: "+format+"\n", a...)
	}
}

// Hit is a loaded entry.
type Hit struct {
	Key     Key
	ID      string
	Stored  time.Time
	Payload json.RawMessage
	Console string
}

// Load returns k's entry, if there is a valid one. A corrupt entry is
// removed with a warning and reads as a miss.
func (s *Store) Load(k Key) (*Hit, bool) {
	id := k.ID()
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		s.warnf("entry %s unreadable, booting instead: %v", id, err)
		return nil, false
	}
	e, err := decode(b, id)
	if err == nil && e.Key != k {
		err = errors.New("its key differs from the one asked for")
	}
	if err != nil {
		s.Drop(id, "corrupt: "+err.Error())
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(s.path(id), now, now) // last use, for prune; a failed touch only ages it
	return &Hit{Key: e.Key, ID: id, Stored: e.Stored, Payload: e.Payload, Console: e.Console}, true
}

// decode parses and validates one entry file named id.
func decode(b []byte, id string) (*entry, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("does not parse: %w", err)
	}
	switch {
	case e.Format != Format:
		return nil, fmt.Errorf("format %d, want %d", e.Format, Format)
	case e.ID != id:
		return nil, fmt.Errorf("names id %q", e.ID)
	case e.Key.ID() != id:
		return nil, errors.New("its key does not hash to its name")
	case len(e.Payload) == 0 || e.Payload[0] != '{':
		return nil, errors.New("no payload object")
	case e.Sum != sum(e.Payload):
		return nil, errors.New("payload checksum mismatch")
	}
	return &e, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Save stores payload (a JSON object) and the console log under k:
// written to a temporary file beside the entry, then renamed over it.
func (s *Store) Save(k Key, payload any, console string) error {
	p, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("rcache: %w", err)
	}
	id := k.ID()
	b, err := json.Marshal(entry{Format: Format, ID: id, Key: k, Stored: time.Now().UTC(), Sum: sum(p), Payload: p, Console: console})
	if err != nil {
		return fmt.Errorf("rcache: %w", err)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil { // cleared meanwhile
		return fmt.Errorf("rcache: %w", err)
	}
	f, err := os.CreateTemp(s.Dir, ".tmp-"+id+"-")
	if err != nil {
		return fmt.Errorf("rcache: %w", err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(f.Name()) // a half-written temp file is never read
		return fmt.Errorf("rcache: entry %s: %w", id, err)
	}
	if err := os.Rename(f.Name(), s.path(id)); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("rcache: entry %s: %w", id, err)
	}
	return nil
}

// Drop removes entry id, saying why.
func (s *Store) Drop(id, why string) {
	s.warnf("dropping entry %s: %s", id, why)
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.warnf("entry %s not removed: %v", id, err)
	}
}

// Info is one entry in a listing.
type Info struct {
	ID     string
	Key    Key
	Stored time.Time
	Used   time.Time // last stored or reused
	Size   int64
	Bad    string // why the entry is corrupt; empty when valid
}

// List returns every entry, the newest use first; corrupt ones carry Bad.
func (s *Store) List() ([]Info, error) {
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("rcache: %w", err)
	}
	var out []Info
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		in := Info{ID: id}
		if fi, err := de.Info(); err == nil {
			in.Used, in.Size = fi.ModTime(), fi.Size()
		}
		b, err := os.ReadFile(s.path(id))
		var e *entry
		if err == nil {
			e, err = decode(b, id)
		}
		if err != nil {
			in.Bad = err.Error()
		} else {
			in.Key, in.Stored = e.Key, e.Stored
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Used.After(out[j].Used) })
	return out, nil
}

// Prune removes the entries last used before cutoff, the corrupt ones,
// and temporary files a crashed writer left; it returns how many entries
// went and their bytes.
func (s *Store) Prune(cutoff time.Time) (int, int64, error) {
	list, err := s.List()
	if err != nil {
		return 0, 0, err
	}
	n, size := 0, int64(0)
	var errs []error
	for _, in := range list {
		if in.Bad == "" && !in.Used.Before(cutoff) {
			continue
		}
		if err := os.Remove(s.path(in.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n, size = n+1, size+in.Size
	}
	tmps, _ := filepath.Glob(filepath.Join(s.Dir, ".tmp-*"))
	for _, t := range tmps {
		if fi, err := os.Stat(t); err == nil && fi.ModTime().Before(time.Now().Add(-time.Hour)) {
			_ = os.Remove(t) // a writer's leftover: never read, only space
		}
	}
	return n, size, errors.Join(errs...)
}

// Clear removes every entry.
func (s *Store) Clear() (int, int64, error) {
	return s.Prune(time.Now().Add(100 * 365 * 24 * time.Hour))
}
