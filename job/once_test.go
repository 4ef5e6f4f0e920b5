package job

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/wire"
)

// TestBootOnce: kci run's one boot goes through the engine: the plan as
// given, logical seed 1, the console under the run directory, and a
// failure blamed by its kind with kci test's exit codes.
func TestBootOnce(t *testing.T) {
	cases := []struct {
		name string
		boot scriptedBoot
		code int // 0: no error
	}{
		{"ok", bootOK(10), 0},
		{"crash", bootFails(failure.Crash, "kernel panic"), ExitBoot},
		{"machine", bootFails(failure.Infra, "qemu: no such file"), ExitInternal},
	}
	for _, c := range cases {
		dir := t.TempDir()
		f := &fakeBooter{base: []scriptedBoot{c.boot}}
		plan := wire.Plan{Command: []string{"uname", "-r"}}
		o := OnceOptions{Dir: dir, Tree: "stock", Append: []string{"quiet"}, BootTimeout: 3 * time.Minute}
		once, err := BootOnce(context.Background(), f, fakeKernel("base-stock"), plan, o)
		var ee *ExitError
		switch {
		case c.code == 0 && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.code != 0 && (!errors.As(err, &ee) || ee.Code != c.code):
			t.Errorf("%s: %v, want exit %d", c.name, err, c.code)
		}
		if len(f.reqs) != 1 {
			t.Fatalf("%s: %d boots, want 1", c.name, len(f.reqs))
		}
		req := f.reqs[0]
		if want := filepath.Join(dir, "console", "stock-run.log"); req.Console != want || once.Console != want {
			t.Errorf("%s: console %q, kept %q, want %q", c.name, req.Console, once.Console, want)
		}
		if req.Seed != 1 || len(req.Plan.Command) != 2 || once.Result == nil {
			t.Errorf("%s: seed %d, plan %+v, result %v: want seed 1, the plan given, a result", c.name, req.Seed, req.Plan, once.Result)
		}
		if len(req.Append) != 1 || req.Append[0] != "quiet" || req.BootTimeout != 3*time.Minute {
			t.Errorf("%s: append %q, boot timeout %v: want [quiet], 3m", c.name, req.Append, req.BootTimeout)
		}
	}
}
