package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// make's compilers run at buildNice beside boots, and at kci's own
// priority for a build that is the whole command (Options.Foreground).
func TestBuildNiceness(t *testing.T) {
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - prio // getpriority(2)'s raw value is 20 - nice
	for _, tc := range []struct {
		opt  Options
		want int
	}{
		{Options{}, max(own, buildNice)},
		{Options{Foreground: true}, own},
	} {
		c, base := fakeBase(t)
		out := filepath.Join(t.TempDir(), "nice")
		// A recipe line of bzImage records its own niceness: field 19 of
		// /proc/self/stat, in a grandchild of make like a compiler.
		patch := fmt.Sprintf(`--- a/Makefile
+++ b/Makefile
@@ -10,4 +10,5 @@ olddefconfig:
 bzImage:
+	cut -d' ' -f19 /proc/self/stat > %s
 	mkdir -p $(O)/include/config $(O)/arch/x86/boot
 	echo 6.1.0$(LOCALVERSION) > $(O)/include/config/kernel.release
 	cp /bin/true $(O)/vmlinux
`, out)
		req := Request{Base: base, Patches: []Patch{diffPatch("nice.diff", "record niceness", patch)}}
		if _, err := c.Build(context.Background(), req, tc.opt); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || got != tc.want {
			t.Errorf("Foreground %v: a compiler's niceness %q, want %d", tc.opt.Foreground, data, tc.want)
		}
	}
}
