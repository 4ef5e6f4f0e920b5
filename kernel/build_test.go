package kernel

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMakeArgs(t *testing.T) {
	m := makeCommand{Tree: "/t", Jobs: 3, CC: "/c/bin/kci-cc", Release: "-kci"}
	got := m.Args("bzImage")
	want := []string{"O=.kci-o", "ARCH=x86_64", "-j3", "KCFLAGS=-fno-var-tracking", "CC=/c/bin/kci-cc", "HOSTCC=/c/bin/kci-cc", "LOCALVERSION=-kci", "bzImage"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("args %q, want %q", got, want)
	}
	env := strings.Join(m.Env(), " ")
	for _, w := range []string{"KBUILD_BUILD_TIMESTAMP=", "KBUILD_BUILD_USER=kci", "KBUILD_BUILD_HOST=kci", "CCACHE_BASEDIR=/t", "CCACHE_NODEPEND=1"} {
		if !strings.Contains(env, w) {
			t.Errorf("env lacks %s", w)
		}
	}
	// Depend mode caches piggy.o, whose .incbin of the compressed kernel
	// no dependency list names: only kci-cc may turn it on, per file.
	if strings.Contains(env, "CCACHE_DEPEND=") {
		t.Error("env turns ccache's depend mode on for every file: it would serve a stale piggy.o")
	}
}

// TestCompilerWrapper runs kci-cc with a recording gcc and ccache first
// in PATH: a source with an .incbin goes to gcc alone, any other to
// ccache in depend mode, with every argument passed on.
func TestCompilerWrapper(t *testing.T) {
	fake := t.TempDir()
	for _, name := range []string{"gcc", "ccache"} {
		script := "#!/bin/sh\necho " + name + " depend=${CCACHE_DEPEND-} nodepend=${CCACHE_NODEPEND-} \"$@\"\n"
		if err := os.WriteFile(filepath.Join(fake, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cache{Root: t.TempDir()}
	t.Setenv("PATH", t.TempDir())
	if cc, err := c.compiler(); err != nil || cc != "gcc" {
		t.Fatalf("compiler without ccache: %q, %v; want gcc", cc, err)
	}
	t.Setenv("PATH", fake)
	if cc, err := c.compiler(); err != nil || cc != filepath.Join(c.Root, "bin", "kci-cc") {
		t.Fatalf("compiler with ccache in PATH: %q, %v", cc, err)
	}
	src := t.TempDir()
	piggy := filepath.Join(src, "piggy.S")
	plain := filepath.Join(src, "dev.c")
	mustWrite(t, piggy, ".section .rodata..compressed\n.incbin \"vmlinux.bin.gz\"\n")
	mustWrite(t, plain, "int x;\n")
	env := []string{"PATH=" + fake + ":/usr/bin:/bin", "CCACHE_NODEPEND=1"}
	for _, tc := range []struct{ src, want string }{
		{piggy, "gcc depend= nodepend=1 -Wp,-MMD,d -c -o piggy.o " + piggy},
		{plain, "ccache depend=1 nodepend= gcc -Wp,-MMD,d -c -o dev.o " + plain},
	} {
		obj := strings.TrimSuffix(filepath.Base(tc.src), filepath.Ext(tc.src)) + ".o"
		out, err := command{env: env}.run(context.Background(), filepath.Join(c.Root, "bin", "kci-cc"), "-Wp,-MMD,d", "-c", "-o", obj, tc.src)
		if err != nil {
			t.Fatalf("kci-cc %s: %v: %s", tc.src, err, out)
		}
		if strings.TrimSpace(out) != tc.want {
			t.Errorf("kci-cc %s ran %q, want %q", filepath.Base(tc.src), strings.TrimSpace(out), tc.want)
		}
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFirstError(t *testing.T) {
	out := `  CC      net/core/dev.o
  CC      net/core/skbuff.o
../net/core/skbuff.c:6176:18: error: expected expression before ';' token
 6176 | int kci_broken = ;
make[4]: *** [../scripts/Makefile.build:229: net/core/skbuff.o] Error 1
`
	if got := firstError(out); !strings.Contains(got, "skbuff.c:6176:18: error: expected expression") {
		t.Fatalf("firstError = %q", got)
	}
	link := "  LD      vmlinux.o\nld: vmlinux.o: in function `f':\nfoo.c:(.text+0x1): undefined reference to `bar'\n"
	if got := firstError(link); !strings.HasPrefix(got, "ld: ") {
		t.Fatalf("link firstError = %q", got)
	}
}

func TestExpectations(t *testing.T) {
	p := Patch{Data: []byte(`--- a/net/core/filter.c
+++ b/net/core/filter.c
@@ -1,3 +1,9 @@
+__bpf_kfunc int bpf_trace_skb(struct sk_buff *skb, u64 flags__k)
+__bpf_kfunc static int not_this_one_is(void)
--- a/include/trace/events/skb.h
+++ b/include/trace/events/skb.h
+TRACE_EVENT(skb_free,
+DEFINE_EVENT(skb_class, skb_copy,
--- a/include/uapi/linux/bpf.h
+++ b/include/uapi/linux/bpf.h
+	BPF_MAP_TYPE_RHASH,
--- a/tools/include/uapi/linux/bpf.h
+++ b/tools/include/uapi/linux/bpf.h
+	BPF_MAP_TYPE_TOOLSONLY,
`)}
	var got []string
	for _, e := range Expectations([]Patch{p}) {
		got = append(got, e.String())
	}
	want := []string{"kfunc bpf_trace_skb", "kfunc not_this_one_is", "tracepoint skb_free", "tracepoint skb_copy", "map type BPF_MAP_TYPE_RHASH"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestNoteBuildID(t *testing.T) {
	// namesz=4 descsz=4 type=3 "GNU\0" desc=de ad be ef
	note := []byte{4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xde, 0xad, 0xbe, 0xef}
	if got := noteBuildID(note, binary.LittleEndian); got != "deadbeef" {
		t.Fatalf("build id %q", got)
	}
}

func TestTouchesKconfig(t *testing.T) {
	k := Patch{Data: []byte("--- a/net/Kconfig\n+++ b/net/Kconfig\n@@ -1 +1 @@\n")}
	c := Patch{Data: []byte("--- a/net/core/skbuff.c\n+++ b/net/core/skbuff.c\n@@ -1 +1 @@\n")}
	if !touchesKconfig([]Patch{c, k}) || touchesKconfig([]Patch{c}) {
		t.Fatal("Kconfig detection wrong")
	}
}

func TestDefaultCacheCreatesRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "new", "kci")
	t.Setenv("KCI_CACHE", root)
	c, err := DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(c.Root); err != nil || !fi.IsDir() {
		t.Fatalf("cache root %s not created: %v", root, err)
	}
	unlock, err := c.lock(context.Background(), "first-use")
	if err != nil {
		t.Fatalf("lock on a new cache: %v", err)
	}
	unlock()
}

func TestDefaultCacheEmptyHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	t.Setenv("KCI_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", home)
	c, err := DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".cache", "kci"); c.Root != want {
		t.Fatalf("root %s, want %s", c.Root, want)
	}
	if _, err := os.Stat(c.Root); err != nil {
		t.Fatalf("cache root not created under an empty HOME: %v", err)
	}
}

// A leaf build waits for its tree while a tree build waits to seed from
// it: the seed copies for seconds, a leaf builds for a minute, and a
// queue of leaves must not starve the trees built on the same kernel.
func TestLeafLetsWaitingSeedGoFirst(t *testing.T) {
	c := &Cache{Root: t.TempDir()}
	ctx := context.Background()
	seedWaits, err := c.lock(ctx, seedLock("k"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		unlock, err := c.lockTreeForLeaf(ctx, "k")
		if err != nil {
			t.Error(err)
			unlock = func() {}
		}
		got <- unlock
	}()
	select {
	case <-got:
		t.Fatal("leaf took the tree while a seed waited for it")
	case <-time.After(5 * lockPoll):
	}
	// The seed takes the tree and lets both locks go: the leaf follows.
	tree, err := c.lock(ctx, treeLock("k"))
	if err != nil {
		t.Fatal(err)
	}
	tree()
	seedWaits()
	select {
	case unlock := <-got:
		unlock()
	case <-time.After(5 * time.Second):
		t.Fatal("leaf still waiting after the seed was done")
	}
	// With no seed waiting, the tree itself is what a leaf waits for.
	held, err := c.lock(ctx, treeLock("k"))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*lockPoll)
	defer cancel()
	if _, err := c.lockTreeForLeaf(cctx, "k"); err == nil {
		t.Fatal("leaf took a tree another build holds")
	}
	held()
}
