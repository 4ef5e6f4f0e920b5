package boot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/proc"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/rcache"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/wire"
)

// CacheKeyer is a Booter that can say when a boot is exact and what its
// numbers are a function of: the result cache's key. exact is false for
// boots that are not repeatable (KVM, the host clock, SMP without
// record/replay) or carry what the cache does not keep (profiles).
type CacheKeyer interface {
	CacheKey(ctx context.Context, req BootRequest) (key rcache.Key, exact bool, err error)
}

// bootCacheFormat versions the stored payload (BootResult as JSON): bump
// it when BootResult's meaning changes and old entries must not be read.
// 2: the exact counts carry the windows' blocks (VariantExact.Blocks).
const bootCacheFormat = 2

// cachedPayload is what an entry keeps of a boot.
type cachedPayload struct {
	Format int         `json:"format"`
	Result *BootResult `json:"result"`
}

// WithResultCache puts the result cache in front of b: a boot whose key
// is in store comes from it (BootResult.Cache = results.CacheHit), an
// exact boot that ran is stored. The first hit of the cached booter's
// life (one kci run) is booted anyway and compared with its entry; until
// it is, other hits wait, and after a mismatch none is served. A booter
// that is no CacheKeyer, or a nil store, boots everything.
func WithResultCache(b Booter, store *rcache.Store, log io.Writer) Booter {
	c := &cachedBooter{inner: b, store: store, log: log, checked: make(chan struct{})}
	if _, ok := b.(AccelResolver); ok {
		return &cachedResolver{c}
	}
	return c
}

type cachedBooter struct {
	inner Booter
	store *rcache.Store
	log   io.Writer

	mu       sync.Mutex
	checking bool          // the re-check boot is claimed
	checked  chan struct{} // closed when it is done
	disabled bool          // the re-check failed: boot everything
}

// cachedResolver keeps the inner booter's accelerator step visible.
type cachedResolver struct{ *cachedBooter }

func (c *cachedResolver) ResolveAccel(ctx context.Context, k *kernel.Artifacts) (string, string, error) {
	return c.inner.(AccelResolver).ResolveAccel(ctx, k)
}

// GuestClock is the inner booter's, when it reports one.
func (c *cachedResolver) GuestClock() string {
	if r, ok := c.inner.(ClockReporter); ok {
		return r.GuestClock()
	}
	return ""
}

// Prepare is the inner booter's, when it has one.
func (c *cachedBooter) Prepare(ctx context.Context, log io.Writer) error {
	if p, ok := c.inner.(Preparer); ok {
		return p.Prepare(ctx, log)
	}
	return nil
}

func (c *cachedBooter) logf(format string, a ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, format+"\n", a...)
	}
}

// Boot serves req from the cache, re-checks it, or boots and stores it.
func (c *cachedBooter) Boot(ctx context.Context, req BootRequest) (*BootResult, error) {
	keyer, ok := c.inner.(CacheKeyer)
	if !ok || c.store == nil {
		return c.inner.Boot(ctx, req)
	}
	key, exact, err := keyer.CacheKey(ctx, req)
	if err != nil {
		c.logf("kci: warning: result cache: [%s] no key, booting: %v", req.Label, err)
		return c.inner.Boot(ctx, req)
	}
	if !exact {
		return c.inner.Boot(ctx, req)
	}
	if hit, cached := c.load(key); cached {
		recheck, serve := c.claim(ctx)
		switch {
		case recheck:
			return c.recheck(ctx, req, key, hit)
		case serve:
			c.logf("kci: [%s] from the result cache (entry %s, stored %s)", req.Label, key.ID(), hit.stored)
			res := hit.res
			res.Cache = results.CacheHit
			return res, c.serveConsole(req, hit)
		}
	}
	res, err := c.inner.Boot(ctx, req)
	if err == nil && res != nil {
		c.save(key, res, req)
		res.Cache = results.CacheStored
	}
	return res, err
}

// claim says what a hit does: the first is the re-check; the others
// wait for it and are served unless it failed (or ctx ends: then they
// boot, which fails at once).
func (c *cachedBooter) claim(ctx context.Context) (recheck, serve bool) {
	c.mu.Lock()
	if !c.checking {
		c.checking = true
		c.mu.Unlock()
		return true, false
	}
	c.mu.Unlock()
	select {
	case <-c.checked:
	case <-ctx.Done():
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return false, !c.disabled
}

// recheck boots a cached key and compares: a mismatch drops the entry,
// loudly, stores the new boot, and serves no other entry this run.
//
// An entry of several bench variants is re-checked by its prefix: the
// boot stops after its first variant (BootRequest.StopAfter), and what
// ran by then (sanity, capabilities, survival, the first window) must
// equal the entry's. Under icount the boot up to there is the same
// execution as the whole boot's, so a third to a half of a boot checks
// all of it but the later windows and the plugin's counts. The entry's
// numbers are then served with the boot's own phases. A prefix that
// differs is followed by a whole boot, which is stored and used.
func (c *cachedBooter) recheck(ctx context.Context, req BootRequest, key rcache.Key, hit *loaded) (*BootResult, error) {
	ok := false
	defer func() {
		c.mu.Lock()
		c.disabled = !ok
		c.mu.Unlock()
		close(c.checked)
	}()
	prefix := len(hit.res.Variants) > 1 && req.StopAfter == 0
	what := "booting it once"
	if prefix {
		what = "booting it to the end of its first window"
	}
	c.logf("kci: [%s] in the result cache (entry %s): %s to re-check the cache", req.Label, key.ID(), what)
	check := req
	if prefix {
		check.StopAfter, check.Console, check.Tee = 1, "", nil
	}
	res, err := c.inner.Boot(ctx, check)
	if err != nil || res == nil {
		return res, err // a failed boot checks nothing; the run ends with it
	}
	d := ""
	if prefix {
		d = firstPrefixDifference(hit.res, res)
	} else {
		d = firstDifference(hit.res, res)
	}
	if d != "" {
		d += unfencedNote(hit.res, res)
		c.store.Drop(key.ID(), fmt.Sprintf("re-check of [%s] (kernel %s, seed %d) differs: %s; something outside the key "+
			"(kernel, QEMU, initramfs, plan, guest, clock, seed) changed: no cached boot is used in this run", req.Label, key.Release, key.Seed, d))
		if prefix {
			if res, err = c.inner.Boot(ctx, req); err != nil || res == nil {
				return res, err
			}
		}
		c.save(key, res, req)
		res.Cache = results.CacheMismatch
		return res, nil
	}
	ok = true
	c.logf("kci: [%s] result cache re-check: identical to entry %s", req.Label, key.ID())
	if prefix {
		// The entry's numbers, this boot's wall time (the phases that ran).
		served := *hit.res
		served.Phases, served.BootToReady = res.Phases, res.BootToReady
		res = &served
		if err := c.serveConsole(req, hit); err != nil {
			return res, err
		}
	}
	res.Cache = results.CacheChecked
	return res, nil
}

// loaded is a decoded entry.
type loaded struct {
	res     *BootResult
	console string
	stored  string
}

// load reads key's entry and decodes its payload; a payload of another
// format or shape is dropped like a corrupt entry.
func (c *cachedBooter) load(key rcache.Key) (*loaded, bool) {
	hit, ok := c.store.Load(key)
	if !ok {
		return nil, false
	}
	var p cachedPayload
	dec := json.NewDecoder(strings.NewReader(string(hit.Payload)))
	dec.DisallowUnknownFields()
	err := dec.Decode(&p)
	switch {
	case err != nil:
	case p.Format != bootCacheFormat:
		err = fmt.Errorf("payload format %d, want %d", p.Format, bootCacheFormat)
	case p.Result == nil || p.Result.ErrorKind != "" || (len(p.Result.Variants) == 0 && len(p.Result.Cells) == 0):
		err = errors.New("payload holds no clean boot")
	}
	if err != nil {
		c.store.Drop(hit.ID, "corrupt payload: "+lines.First(err.Error()))
		return nil, false
	}
	p.Result.Cache = ""
	return &loaded{res: p.Result, console: hit.Console, stored: hit.Stored.Format("2006-01-02 15:04")}, true
}

// save stores a clean boot; failing to is a warning, never the run's end.
func (c *cachedBooter) save(key rcache.Key, res *BootResult, req BootRequest) {
	if res.ErrorKind != "" {
		return
	}
	var console string
	if req.Console != "" {
		if b, err := os.ReadFile(req.Console); err == nil {
			console = string(b)
		}
	}
	r := *res
	r.Cache = ""
	if err := c.store.Save(key, cachedPayload{Format: bootCacheFormat, Result: &r}, console); err != nil {
		c.logf("kci: warning: result cache: [%s] not stored: %v", req.Label, err)
	}
}

// serveConsole writes a served entry's console log where req wants it.
func (c *cachedBooter) serveConsole(req BootRequest, hit *loaded) error {
	if req.Console == "" || hit.console == "" {
		return nil
	}
	if err := writeConsole(req.Console, hit.console); err != nil {
		return fmt.Errorf("result cache: console log: %w", err)
	}
	return nil
}

func writeConsole(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// firstDifference names the first measured thing that differs between a
// cached boot and a fresh one: a program's counters first, then any other
// part of a variant, the survival cells, sanity and capabilities. Wall
// times (boot to ready) are not measurements of the kernel and differ
// every boot.
func firstDifference(cached, now *BootResult) string {
	for i, v := range cached.Variants {
		if i >= len(now.Variants) || now.Variants[i].Variant != v.Variant {
			return fmt.Sprintf("variant %s missing from the new boot", v.Variant)
		}
		nv := now.Variants[i]
		for j, p := range v.Programs {
			if j >= len(nv.Programs) || nv.Programs[j].Name != p.Name {
				return fmt.Sprintf("program %s/%s missing from the new boot", v.Variant, p.Name)
			}
			if q := nv.Programs[j]; q != p {
				return fmt.Sprintf("program %s/%s: cached %.3f ns/run (%d runs), now %.3f ns/run (%d runs)",
					v.Variant, p.Name, perRun(p), p.RunCnt, perRun(q), q.RunCnt)
			}
		}
		if !reflect.DeepEqual(v, nv) {
			return fmt.Sprintf("variant %s: counters, packets or CPU time differ", v.Variant)
		}
	}
	switch {
	case len(now.Variants) != len(cached.Variants):
		return fmt.Sprintf("the new boot has %d variants, the entry %d", len(now.Variants), len(cached.Variants))
	case !reflect.DeepEqual(cached.Cells, now.Cells):
		return "survival cells differ"
	case !reflect.DeepEqual(cached.Sanity, now.Sanity):
		return "sanity report differs"
	case !reflect.DeepEqual(cached.Caps, now.Caps):
		return "kernel capabilities differ"
	case cached.Clock != now.Clock || cached.TSCkHz != now.TSCkHz || cached.Clocksource != now.Clocksource:
		return "guest clock differs"
	case !reflect.DeepEqual(cached.Exact, now.Exact):
		return "exact counts differ"
	}
	return ""
}

// unfencedNote names the boots of a mismatch whose QEMU main loop ran
// unfenced (vm/fence.go), a known cause with several vCPUs.
func unfencedNote(cached, now *BootResult) string {
	var which []string
	if strings.HasPrefix(cached.MainLoop, "not fenced") {
		which = append(which, "the cached boot")
	}
	if strings.HasPrefix(now.MainLoop, "not fenced") {
		which = append(which, "this one")
	}
	if len(which) == 0 {
		return ""
	}
	return "; QEMU's main loop ran unfenced in " + strings.Join(which, " and ") + ", which moves several vCPUs' counts (kci doctor)"
}

// firstPrefixDifference is firstDifference for a boot stopped after its
// first bench variant: what ran by then must equal the entry's.
func firstPrefixDifference(cached, now *BootResult) string {
	if len(now.Variants) != 1 {
		return fmt.Sprintf("the re-check stopped after %d variants, want 1", len(now.Variants))
	}
	head := *cached
	head.Variants, head.Exact = cached.Variants[:1], nil
	return firstDifference(&head, now)
}

// CacheKey is the result cache's key of a VMBooter boot: exact only under
// TCG with the instruction clock (vm.Repeatable), and
// without profiles or a kci run command, which the cache does not keep.
func (b *VMBooter) CacheKey(ctx context.Context, req BootRequest) (rcache.Key, bool, error) {
	c := b.pluginConfig(ctx)
	if c.Accel != vm.AccelTCG || vm.GuestClock(c) != vm.ClockICount || !vm.Repeatable(c, vm.ClockICount) || req.Plan.Profile || len(req.Plan.Command) > 0 {
		return rcache.Key{}, false, nil
	}
	img, err := b.Image(ctx)
	if err != nil {
		return rcache.Key{}, false, err
	}
	qemu, err := b.qemuVersion(ctx)
	if err != nil {
		return rcache.Key{}, false, err
	}
	kh, err := b.kernelHash(req.Kernel)
	if err != nil {
		return rcache.Key{}, false, err
	}
	plan, err := json.Marshal(req.Plan)
	if err != nil {
		return rcache.Key{}, false, err
	}
	machine, err := vm.ICountMachine(c)
	if err != nil {
		return rcache.Key{}, false, err
	}
	return rcache.Key{
		Kernel:  strings.Join([]string{req.Kernel.Key, req.Kernel.BuildID, kh}, " "),
		Release: req.Kernel.Release,
		QEMU:    qemu,
		Image:   img.Key,
		Plan:    string(plan),
		Guest:   strings.Join(machine, " "), // vCPUs, memory, CPU model, command line, icount and device options
		Clock:   string(vm.AccelTCG) + "/" + string(vm.ClockICount),
		Seed:    max(req.Seed, 1), // QEMU's -seed 0 is seed 1 (vm.icountArgs)
	}, true, nil
}

// qemuVersion is the QEMU build's --version line, asked once.
func (b *VMBooter) qemuVersion(ctx context.Context) (string, error) {
	b.keyMu.Lock()
	defer b.keyMu.Unlock()
	if b.qemu != "" {
		return b.qemu, nil
	}
	bin := b.VM.QEMU
	if bin == "" {
		bin = "qemu-system-x86_64"
	}
	out, err := proc.Cmd{Name: bin, Args: []string{"--version"}, Timeout: 10 * time.Second, StdoutOnly: true}.Run(ctx)
	if err != nil {
		return "", fmt.Errorf("qemu --version: %w", err)
	}
	b.qemu = lines.First(string(out))
	return b.qemu, nil
}

// kernelHash is the bzImage's sha256, hashed once per path: the build id
// says which build, the hash that the file is still it.
func (b *VMBooter) kernelHash(k *kernel.Artifacts) (string, error) {
	b.keyMu.Lock()
	defer b.keyMu.Unlock()
	if h, ok := b.hashes[k.BzImage]; ok {
		return h, nil
	}
	f, err := os.ReadFile(k.BzImage)
	if err != nil {
		return "", fmt.Errorf("kernel hash: %w", err)
	}
	s := sha256.Sum256(f)
	if b.hashes == nil {
		b.hashes = map[string]string{}
	}
	b.hashes[k.BzImage] = hex.EncodeToString(s[:])
	return b.hashes[k.BzImage], nil
}

func perRun(p wire.ProgStat) float64 {
	if p.RunCnt == 0 {
		return 0
	}
	return float64(p.RunTimeNs) / float64(p.RunCnt)
}
