package vm

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A follower reads what is written after it reached the end, takes the
// writer's last bytes once the writer is gone, and ends at once on stop.
func TestFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	if err := os.WriteFile(path, []byte("left over from an earlier boot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := openFollower(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644) // as QEMU opens it
	if err != nil {
		t.Fatal(err)
	}
	exited, stop := make(chan struct{}), make(chan struct{})
	r.start(exited, stop)
	got := make(chan []byte)
	go func() {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	for _, s := range []string{"first ", "line\n", "second"} {
		time.Sleep(3 * followPoll) // the reader is at the end, waiting
		if _, err := w.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	close(exited) // the writer's bytes are all in before it is reaped
	select {
	case b := <-got:
		if string(b) != "first line\nsecond" {
			t.Fatalf("followed %q, want what the writer wrote, not the old file", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower did not end when the writer had gone")
	}

	r2, err := openFollower(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	r2.start(make(chan struct{}), stop)
	close(stop)
	if n, err := r2.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after stop: %d, %v; want 0, EOF", n, err)
	}
}
