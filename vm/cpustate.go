package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CPUState is where one vCPU was when a boot or a step ran out of time:
// read from QEMU's monitor ("info registers -a") before it is killed, so
// a hang says which code each vCPU was in (a spin in stop_machine, a
// halted CPU waiting for an IPI that never came).
type CPUState struct {
	Index  int    `json:"index"`
	PC     uint64 `json:"pc"`     // RIP (EIP before long mode)
	CPL    int    `json:"cpl"`    // 0 = kernel, 3 = user
	Halted bool   `json:"halted"` // HLT=1: waiting for an interrupt
	Func   string `json:"func,omitempty"`
	// Stuck: not halted, and every register the same in two reads
	// stuckGap apart while another vCPU's changed (see markStuck).
	Stuck bool   `json:"stuck,omitempty"`
	regs  string // the vCPU's whole register dump, to compare reads
}

// stuckGap is how long hangCPUs waits between its two reads of a guest
// of several vCPUs under TCG: long enough for QEMU's one thread to run
// millions of instructions.
const stuckGap = time.Second

// cpuStates asks QEMU for every vCPU's registers. QMP has no command for
// them, so it goes through the human monitor.
func (m *monitor) cpuStates(ctx context.Context) ([]CPUState, error) {
	var out []byte
	err := m.call(ctx, func() (err error) {
		out, err = m.sock.Run([]byte(`{"execute":"human-monitor-command","arguments":{"command-line":"info registers -a"}}`))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("qmp info registers: %w", err)
	}
	var r struct {
		Return string `json:"return"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("qmp info registers: %w", err)
	}
	return parseCPUStates(r.Return)
}

// parseCPUStates reads "info registers -a": a "CPU#<n>" line per vCPU,
// then its registers, RIP= (or EIP=) with CPL= and HLT= among them.
func parseCPUStates(text string) ([]CPUState, error) {
	var out []CPUState
	var cur *CPUState
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if n, ok := strings.CutPrefix(line, "CPU#"); ok {
			i, err := strconv.Atoi(n)
			if err != nil {
				return nil, fmt.Errorf("info registers: %q: not a CPU header", line)
			}
			out = append(out, CPUState{Index: i, PC: ^uint64(0)})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		cur.regs += line + "\n"
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			switch k {
			case "RIP", "EIP":
				pc, err := strconv.ParseUint(v, 16, 64)
				if err != nil {
					return nil, fmt.Errorf("info registers: CPU#%d: %s: %w", cur.Index, f, err)
				}
				cur.PC = pc
			case "CPL":
				cur.CPL, _ = strconv.Atoi(v)
			case "HLT":
				cur.Halted = v == "1"
			}
		}
	}
	for _, c := range out {
		if c.PC == ^uint64(0) {
			return nil, fmt.Errorf("info registers: CPU#%d: no RIP", c.Index)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("info registers: no CPU in %q", firstLine(text))
	}
	return out, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// describeCPUs is the line a timeout carries: each vCPU's code.
func describeCPUs(cs []CPUState) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		where := fmt.Sprintf("%#x", c.PC)
		if c.Func != "" {
			where = c.Func + " (" + where + ")"
		}
		switch {
		case c.CPL == 3:
			where += ", user space"
		case c.Halted:
			where += ", halted"
		}
		if c.Stuck {
			where += fmt.Sprintf(", no register changed in %v while another vCPU ran"+
				" (QEMU 7.2's round-robin gave it no turn, or it spins on one instruction)", stuckGap)
		}
		parts[i] = fmt.Sprintf("vCPU %d at %s", c.Index, where)
	}
	return strings.Join(parts, "; ")
}

// hangCPUs reads where the vCPUs are, named by Config.Symbolize, for a
// hang's or a crash's report; an error when QEMU cannot say (its monitor
// wedged too), which the report carries instead.
func (l *loop) hangCPUs(ctx context.Context) ([]CPUState, error) {
	cs, err := l.mon.cpuStates(ctx)
	if err != nil {
		return nil, err
	}
	if len(cs) > 1 && l.cfg.Accel == AccelTCG {
		// Under TCG one host thread gives the vCPUs turns, and QEMU 7.2
		// can give one none at all (docs/internals.md): a second read
		// tells a vCPU that runs from one that does not.
		select {
		case <-ctx.Done():
			return cs, nil
		case <-time.After(stuckGap):
		}
		again, err := l.mon.cpuStates(ctx)
		if err != nil {
			return cs, nil // the first read is still news
		}
		cs = markStuck(cs, again)
	}
	for i := range cs {
		if l.cfg.Symbolize != nil && cs[i].CPL == 0 {
			cs[i].Func = l.cfg.Symbolize(cs[i].PC)
		}
	}
	return cs, nil
}

// markStuck returns the second read with Stuck set on each vCPU that is
// not halted and whose registers are all the same in both reads, when
// another vCPU's changed (so QEMU ran instructions meanwhile). A halted
// vCPU waits for an interrupt, which is the guest's business; with no
// vCPU changing, the whole machine stood still (paused, or the host gave
// QEMU no CPU), which says nothing about any one vCPU.
func markStuck(first, second []CPUState) []CPUState {
	if len(first) != len(second) {
		return second
	}
	ran := false
	for i := range first {
		if first[i].regs != second[i].regs {
			ran = true
		}
	}
	for i := range second {
		second[i].Stuck = ran && !second[i].Halted && first[i].Index == second[i].Index && first[i].regs == second[i].regs
	}
	return second
}

// whereCPUs is a report's phrase for hangCPUs' answer.
func whereCPUs(cs []CPUState, err error) string {
	if err != nil {
		return "where the vCPUs were is unknown (" + err.Error() + ")"
	}
	return describeCPUs(cs)
}
