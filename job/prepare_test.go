package job

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// gatedBuilder builds only once the booter has started preparing: a job
// that prepared after its builds would wait here until the deadline.
type gatedBuilder struct {
	fakeBuilder
	started <-chan struct{}
}

func (g *gatedBuilder) Tree(ctx context.Context, t *project.Tree) (*kernel.Artifacts, error) {
	select {
	case <-g.started:
	case <-time.After(5 * time.Second):
		return nil, errors.New("the booter was not preparing while the kernels built")
	}
	return g.fakeBuilder.Tree(ctx, t)
}

// preparingBooter prepares until it is told to stop, then fails with err
// (or with the cancellation when err is nil).
type preparingBooter struct {
	*fakeBooter
	started  chan struct{}
	finished bool
	err      error
}

func (p *preparingBooter) Prepare(ctx context.Context, _ io.Writer) error {
	close(p.started)
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond) // a build winding down after its cancel
	p.finished = true
	if p.err != nil {
		return p.err
	}
	return ctx.Err()
}

// The booter's preparation (VMBooter: the initramfs) runs beside the
// kernel builds, and a run ends only once it has stopped; its failure is
// logged, its cancellation at the run's end is not.
func TestPrepareRunsBesideTheBuilds(t *testing.T) {
	for _, prepErr := range []error{nil, errors.New("u-root busybox: go build failed")} {
		pb := &preparingBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}},
			started: make(chan struct{}), err: prepErr}
		b := &gatedBuilder{started: pb.started}
		var log bytes.Buffer
		proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
		o := TestOptions{Patches: []string{testPatch}, Reps: 2, Out: filepath.Join(t.TempDir(), "run"), Log: &log}
		if _, err := (&Tester{Kernels: b, Booter: pb, Project: proj}).Test(context.Background(), o); err != nil {
			t.Fatalf("prepare error %v: Test: %v", prepErr, err)
		}
		if !pb.finished {
			t.Errorf("prepare error %v: Test returned with the preparation still running", prepErr)
		}
		logged := strings.Contains(log.String(), "initramfs, prepared beside the kernel builds")
		if logged != (prepErr != nil) {
			t.Errorf("prepare error %v: logged %v, want %v:\n%s", prepErr, logged, prepErr != nil, log.String())
		}
	}
}

// lineBooter writes its preparation's progress in pieces.
type lineBooter struct{ *fakeBooter }

func (lineBooter) Prepare(_ context.Context, log io.Writer) error {
	if log == nil {
		return errors.New("no log to prepare with")
	}
	for _, s := range []string{"vmimage: building u-", "root busybox\nvmimage: building ", "kci-guest\n"} {
		if _, err := io.WriteString(log, s); err != nil {
			return err
		}
	}
	return nil
}

// What the preparation prints goes through the run's progress meter, a
// whole line at a time: on a terminal, above the build's live line.
func TestPrepareSaysThroughTheMeter(t *testing.T) {
	var out bytes.Buffer
	lb := lineBooter{&fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}}
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	o := TestOptions{Patches: []string{testPatch}, Reps: 2, Out: filepath.Join(t.TempDir(), "run"), Log: io.Discard, Progress: progress.New(&out)}
	if _, err := (&Tester{Kernels: &fakeBuilder{}, Booter: lb, Project: proj}).Test(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kci: vmimage: building u-root busybox\n", "kci: vmimage: building kci-guest\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the meter's output lacks %q:\n%s", want, out.String())
		}
	}
}
