package progress

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func fakeClock() func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(30 * time.Second); return t }
}

// Off a terminal (a CI log): one line when a phase starts, one when it
// ends, with the elapsed time and the objects built; nothing in between.
func TestPlainLog(t *testing.T) {
	var out bytes.Buffer
	m := newMeter(&out, false)
	m.now = fakeClock()
	m.Begin("[gtp] building base kernel")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(m, "  CC      net/core/f%d.o\n", i)
	}
	fmt.Fprint(m, "make[1]: Entering directory\n  LD      vmlinux\n")
	m.Note("sanity")
	m.End("built")
	m.Begin("boot 1/2")
	m.Begin("boot 2/2") // ends the first
	got := out.String()
	want := "kci: [gtp] building base kernel ...\n" +
		"kci: [gtp] building base kernel: built (30s, 4 objects)\n" +
		"kci: boot 1/2 ...\n" +
		"kci: boot 1/2: stopped (30s)\n" +
		"kci: boot 2/2 ...\n"
	if got != want {
		t.Fatalf("plain log:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "\r") {
		t.Fatal("carriage return in a plain log")
	}
}

// On a terminal the live line names the phase, the objects so far and the
// last one.
func TestTerminalLine(t *testing.T) {
	var out bytes.Buffer
	m := newMeter(&out, true)
	m.Begin("[stock] building base kernel")
	fmt.Fprint(m, "  CC      kernel/bpf/hashtab.o\n")
	time.Sleep(250 * time.Millisecond) // past the redraw throttle
	fmt.Fprint(m, "  CC      kernel/bpf/syscall.o\n")
	m.End("built")
	got := out.String()
	for _, want := range []string{"[stock] building base kernel: 2 objects, CC kernel/bpf/syscall.o", "kci: [stock] building base kernel: built ("} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
}

func TestNilMeter(t *testing.T) {
	var m *Meter
	m.Begin("x")
	m.Note("y")
	if n, err := m.Write([]byte("  CC a.o\n")); n != 9 || err != nil {
		t.Fatalf("nil write: %d, %v", n, err)
	}
	m.End("z")
}

// Say is one line in a plain log, and leaves the phase running.
func TestSayIsOneLine(t *testing.T) {
	var out bytes.Buffer
	m := newMeter(&out, false)
	m.now = fakeClock()
	m.Say("repaired %s", "x")
	m.Begin("build")
	m.Say("news")
	m.End("built")
	want := "kci: repaired x\nkci: build ...\nkci: news\nkci: build: built (30s)\n"
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	var nilm *Meter
	nilm.Say("silent")
}
