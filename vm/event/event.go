// Package event is the wire format between the guest agent and the host: one
// JSON object per line on a dedicated virtio-serial port. It is a leaf package
// so the guest binary does not pull in QEMU code.
package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// Port is the virtio-serial port name the agent writes to; in the guest it
// appears as /dev/virtio-ports/<Port>.
const Port = "kci.0"

// Event types. A run is complete only when Done arrives.
const (
	Ready   = "ready"   // agent started; Data: Hello
	Log     = "log"     // free text progress; Data: string
	Sanity  = "sanity"  // wire.Sanity
	Caps    = "caps"    // wire.Caps
	Cell    = "cell"    // wire.Cell (one survival matrix cell)
	Variant = "variant" // wire.VariantResult (one benchmark variant)
	Profile = "profile" // wire.Profile
	Error   = "error"   // Data: ErrorData; the guest gave up
	Done    = "done"    // Data: DoneData
	StepBeg = "step"    // a step starts; Data: StepData (for per-step timeouts)
)

// Event is one line on the channel.
type Event struct {
	Type string          `json:"type"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Hello is the Ready payload.
type Hello struct {
	Agent   string  `json:"agent"`    // kci-guest version
	Release string  `json:"release"`  // uname -r
	Uptime  float64 `json:"uptime_s"` // /proc/uptime at agent start
	// The guest clock's scale: what the kernel calibrated (cpu MHz of
	// /proc/cpuinfo, in kHz) and the clocksource it chose. Boots compared
	// with each other must agree on both.
	TSCkHz      int64  `json:"tsc_khz,omitempty"`
	Clocksource string `json:"clocksource,omitempty"`
}

// StepData announces a step and how long the host should let it run.
type StepData struct {
	Name    string        `json:"name"`
	Timeout time.Duration `json:"timeout_ns"`
}

// ErrorData says why the guest stopped early.
type ErrorData struct {
	Step    string `json:"step"`
	Message string `json:"message"`
}

// DoneData closes a run.
type DoneData struct {
	OK bool `json:"ok"`
}

// New builds an event with v marshalled as its payload.
func New(typ string, v any) (Event, error) {
	ev := Event{Type: typ, Time: time.Now().UTC()}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return Event{}, fmt.Errorf("event %s: %w", typ, err)
		}
		ev.Data = b
	}
	return ev, nil
}

// Decode unmarshals the payload into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("event %s: decode payload: %w", e.Type, err)
	}
	return nil
}
