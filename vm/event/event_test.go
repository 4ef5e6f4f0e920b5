package event_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// frame writes evs the way the guest agent does (cmd/kci-guest's emitter:
// json.Marshal of the Event, then '\n') and reads them back the way the
// host does (vm's readEvents: one line, one json.Unmarshal into Event).
func frame(t *testing.T, evs ...event.Event) []event.Event {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal %s: %v", ev.Type, err)
		}
		if bytes.IndexByte(b, '\n') >= 0 {
			t.Fatalf("%s event encodes to more than one line: %q", ev.Type, b)
		}
		buf.Write(append(b, '\n'))
	}
	var out []event.Event
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev event.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(evs) {
		t.Fatalf("%d events written, %d lines read back", len(evs), len(out))
	}
	return out
}

// TestRoundTrip: every event type the guest sends, with the payload its
// comment names (newlines in the text included: a log line, a folded
// profile), survives New, the line framing and Decode unchanged, with its
// type and its UTC timestamp.
func TestRoundTrip(t *testing.T) {
	cases := []struct {
		typ  string
		data any        // what the guest sends
		into func() any // a pointer to a zero value of the payload's type
	}{
		{event.Ready, event.Hello{Agent: "kci-guest/dev", Release: "6.12.0", Uptime: 1.25, TSCkHz: 2999998, Clocksource: "tsc"}, func() any { return new(event.Hello) }},
		{event.Log, "bench cnt: window 1 of 3\nsecond line", func() any { return new(string) }},
		{event.Sanity, wire.Sanity{Release: "6.12.0", BuildID: "abc", Version: "Linux version 6.12.0", JIT: true, NumCPU: 2, ClockSource: "tsc", Problems: []string{"lockdep"}}, func() any { return new(wire.Sanity) }},
		{event.Caps, wire.Caps{Kfuncs: map[string]bool{"bpf_skb_ext_get": true}, Tracepoints: map[string]bool{"kfree_skb": true}, MapTypes: map[string]bool{"BPF_MAP_TYPE_HASH": true}, TCX: true, Links: map[string]bool{"veth": true, "gre": false}}, func() any { return new(wire.Caps) }},
		{event.Cell, wire.Cell{Carrier: "ext", Path: "veth-netns", Expected: "survives", Observed: "lost", Reason: "scrubbed", Detail: "0 of 100", Pass: false}, func() any { return new(wire.Cell) }},
		{event.Variant, wire.VariantResult{Variant: "cnt", Attach: "tcx", Counters: map[string]uint64{"found": 7}, PerSecond: []uint64{1, 2, 3}, PPS: 12345.5, Window: 3 * time.Second, Valid: true}, func() any { return new(wire.VariantResult) }},
		{event.Profile, wire.Profile{Variant: "hash", Folded: "a;b;c 3\na;d 1\n", CPUs: []int{0, 1}, FreqHz: 999, Window: time.Second, Samples: 4, Dropped: 1}, func() any { return new(wire.Profile) }},
		{event.StepBeg, event.StepData{Name: "survival", Timeout: 90 * time.Second}, func() any { return new(event.StepData) }},
		{event.Error, event.ErrorData{Step: "bench", Message: "load cnt: \"permission denied\""}, func() any { return new(event.ErrorData) }},
		{event.Done, event.DoneData{OK: true}, func() any { return new(event.DoneData) }},
	}
	var sent []event.Event
	before := time.Now()
	for _, c := range cases {
		ev, err := event.New(c.typ, c.data)
		if err != nil {
			t.Fatalf("New(%s): %v", c.typ, err)
		}
		sent = append(sent, ev)
	}
	after := time.Now()
	got := frame(t, sent...)
	for i, c := range cases {
		ev := got[i]
		if ev.Type != c.typ {
			t.Errorf("event %d: type %q, sent %q", i, ev.Type, c.typ)
		}
		if ev.Time.Location() != time.UTC {
			t.Errorf("%s: time %v is not UTC", c.typ, ev.Time)
		}
		if !ev.Time.Equal(sent[i].Time) || ev.Time.Before(before) || ev.Time.After(after) {
			t.Errorf("%s: time %v, sent %v (New between %v and %v)", c.typ, ev.Time, sent[i].Time, before, after)
		}
		p := c.into()
		if err := ev.Decode(p); err != nil {
			t.Errorf("%s: Decode: %v", c.typ, err)
			continue
		}
		if v := reflect.ValueOf(p).Elem().Interface(); !reflect.DeepEqual(v, c.data) {
			t.Errorf("%s: decoded %#v, sent %#v", c.typ, v, c.data)
		}
	}
}

// TestEncoding pins the bytes on the port: the guest in a cached initramfs
// and the host may be built from different trees, so the names of the
// types, of the fields and the units (nanoseconds) are the protocol.
func TestEncoding(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	cases := []struct {
		typ  string
		data any
		want string
	}{
		{event.StepBeg, event.StepData{Name: "bench", Timeout: 90 * time.Second},
			`{"type":"step","time":"2025-03-04T05:06:07.000000008Z","data":{"name":"bench","timeout_ns":90000000000}}`},
		{event.Done, event.DoneData{OK: true},
			`{"type":"done","time":"2025-03-04T05:06:07.000000008Z","data":{"ok":true}}`},
		{event.Error, event.ErrorData{Step: "caps", Message: "boom"},
			`{"type":"error","time":"2025-03-04T05:06:07.000000008Z","data":{"step":"caps","message":"boom"}}`},
		{event.Ready, event.Hello{Agent: "kci-guest/x", Release: "6.12", Uptime: 0.5},
			`{"type":"ready","time":"2025-03-04T05:06:07.000000008Z","data":{"agent":"kci-guest/x","release":"6.12","uptime_s":0.5}}`},
		{event.Log, "a\nb",
			`{"type":"log","time":"2025-03-04T05:06:07.000000008Z","data":"a\nb"}`},
		// No payload: the data key is left out, not sent as null.
		{event.Ready, nil,
			`{"type":"ready","time":"2025-03-04T05:06:07.000000008Z"}`},
	}
	for _, c := range cases {
		ev, err := event.New(c.typ, c.data)
		if err != nil {
			t.Fatalf("New(%s): %v", c.typ, err)
		}
		ev.Time = at
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.typ, b, c.want)
		}
	}
	names := [][2]string{
		{event.Ready, "ready"}, {event.Log, "log"}, {event.Sanity, "sanity"}, {event.Caps, "caps"},
		{event.Cell, "cell"}, {event.Variant, "variant"}, {event.Profile, "profile"},
		{event.Error, "error"}, {event.Done, "done"}, {event.StepBeg, "step"},
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n[0] != n[1] {
			t.Errorf("event type %q, the protocol's name is %q", n[0], n[1])
		}
		if seen[n[0]] {
			t.Errorf("two event types are called %q", n[0])
		}
		seen[n[0]] = true
	}
	// QEMU names the virtio-serial port and the agent opens
	// /dev/virtio-ports/<Port>: the same constant on both sides.
	if event.Port != "kci.0" {
		t.Errorf("Port %q, want kci.0", event.Port)
	}
}

// TestNewError: a payload JSON cannot carry fails in New, naming the
// event type, with the encoder's error underneath.
func TestNewError(t *testing.T) {
	_, err := event.New(event.Ready, event.Hello{Uptime: math.NaN()})
	var uv *json.UnsupportedValueError
	if !errors.As(err, &uv) {
		t.Fatalf("NaN uptime: err %v, want a *json.UnsupportedValueError", err)
	}
	if !strings.HasPrefix(err.Error(), "event ready: ") {
		t.Errorf("error %q does not start with the event type", err)
	}
	_, err = event.New(event.Log, make(chan int))
	var ut *json.UnsupportedTypeError
	if !errors.As(err, &ut) || !strings.HasPrefix(err.Error(), "event log: ") {
		t.Errorf("channel payload: err %v, want an \"event log: \" *json.UnsupportedTypeError", err)
	}
}

// TestDecodeError: a payload that is cut short, is not JSON, is missing
// or has the wrong shape is an error from Decode naming the event type
// (the host turns Done's and Step's into an infra error), with the
// decoder's error underneath; it never silently yields a zero value.
func TestDecodeError(t *testing.T) {
	full, err := event.New(event.Done, event.DoneData{OK: true})
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("truncated payload", func(t *testing.T) {
		ev := event.Event{Type: event.Done, Data: full.Data[:len(full.Data)-1]}
		var dd event.DoneData
		err := ev.Decode(&dd)
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("err %v, want a *json.SyntaxError", err)
		}
		if !strings.HasPrefix(err.Error(), "event done: decode payload: ") {
			t.Errorf("error %q: want it to start %q", err, "event done: decode payload: ")
		}
	})
	t.Run("bad JSON", func(t *testing.T) {
		ev := event.Event{Type: event.StepBeg, Data: json.RawMessage(`{name:"x"}`)}
		var sd event.StepData
		err := ev.Decode(&sd)
		var se *json.SyntaxError
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "event step: decode payload: ") {
			t.Errorf("err %v, want an \"event step: decode payload: \" *json.SyntaxError", err)
		}
	})
	t.Run("no payload", func(t *testing.T) {
		ev, err := event.New(event.Done, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := frame(t, ev)[0]
		var dd event.DoneData
		if err := got.Decode(&dd); err == nil || !strings.HasPrefix(err.Error(), "event done: decode payload: ") {
			t.Errorf("Decode of a done without data: err %v, want an \"event done: decode payload: \" error", err)
		}
	})
	t.Run("wrong shape", func(t *testing.T) {
		ev, err := event.New(event.StepBeg, event.StepData{Name: "x", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var s string
		var te *json.UnmarshalTypeError
		if err := ev.Decode(&s); !errors.As(err, &te) || !strings.HasPrefix(err.Error(), "event step: decode payload: ") {
			t.Errorf("object into a string: err %v, want an \"event step: decode payload: \" *json.UnmarshalTypeError", err)
		}
		bad := event.Event{Type: event.StepBeg, Data: json.RawMessage(`{"name":"x","timeout_ns":"90s"}`)}
		if err := bad.Decode(new(event.StepData)); !errors.As(err, &te) {
			t.Errorf("timeout as a string: err %v, want a *json.UnmarshalTypeError (timeout_ns is an integer)", err)
		}
	})
	t.Run("truncated line", func(t *testing.T) {
		// The line framing is json.Unmarshal of the whole line into Event:
		// a line cut anywhere is refused, never half an event.
		for n := 1; n < len(line); n++ {
			var ev event.Event
			if err := json.Unmarshal(line[:n], &ev); err == nil {
				t.Fatalf("line cut to %q decodes to %+v", line[:n], ev)
			}
		}
	})
	t.Run("unknown type", func(t *testing.T) {
		// The package keeps a type it has no name for unchanged: an older
		// host's switch passes over a newer guest's event, it is not lost
		// or renamed on the way.
		ev, err := event.New("future", map[string]int{"n": 1})
		if err != nil {
			t.Fatal(err)
		}
		got := frame(t, ev)[0]
		var m map[string]int
		if got.Type != "future" || got.Decode(&m) != nil || m["n"] != 1 {
			t.Errorf("unknown type came back as %q %s", got.Type, got.Data)
		}
	})
}

// TestLeaf: the package is a leaf (its comment): it imports only the
// standard library, so the guest binary links no host code through it.
func TestLeaf(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool to list the package's imports")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/kci-dev/kci/vm/event" {
			t.Errorf("vm/event imports %s: it must stay a leaf", p)
		}
	}
}
