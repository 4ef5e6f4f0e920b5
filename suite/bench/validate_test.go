package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/wire"
)

func TestWithNsPerPkt(t *testing.T) {
	// Egress ran for 1000 packets, ingress for 990 (ten still in flight
	// when the window closed), the reaper for 1500 skbs (some not ours).
	progs := []wire.ProgStat{
		{Name: "w", Type: "sched_cls", RunTimeNs: 200_000, RunCnt: 1000},
		{Name: "r", Type: "sched_cls", RunTimeNs: 63_000, RunCnt: 990},
		{Name: "free", Type: "tracing", RunTimeNs: 300_000, RunCnt: 1500},
		{Name: "copy", Type: "tracing", RunTimeNs: 0, RunCnt: 0},
	}
	got := withNsPerPkt(progs)
	want := map[string]float64{"w": 200, "r": 63, "free": 300, "copy": 0}
	for _, p := range got {
		if math.Abs(p.NsPerPkt-want[p.Name]) > 1e-9 {
			t.Errorf("%s: %v ns/pkt, want %v", p.Name, p.NsPerPkt, want[p.Name])
		}
	}
	if progs[0].NsPerPkt != 0 {
		t.Error("withNsPerPkt modified its input")
	}
	// No sched_cls program ran: nothing to normalise by.
	for _, p := range withNsPerPkt([]wire.ProgStat{{Name: "free", Type: "tracing", RunTimeNs: 5, RunCnt: 5}}) {
		if p.NsPerPkt != 0 {
			t.Errorf("without packets: %v ns/pkt, want 0", p.NsPerPkt)
		}
	}
}

func TestValidate(t *testing.T) {
	steady := []uint64{1000, 1010, 990, 1000}
	okLo := wire.LoStat{RxPackets: 4000, TxPackets: 4000}
	base := measurement{lo: okLo, perSecond: steady, plannedPPS: 1000, window: 4 * time.Second}
	with := func(f func(*measurement)) measurement {
		m := base
		f(&m)
		return m
	}
	cases := []struct {
		name string
		m    measurement
		want string // "" = valid; else a substring of the reason
	}{
		{"floor ok", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000}
		}), ""},
		{"floor unbalanced", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{"INGRESS": 4999, "EGRESS": 5000}
		}), "INGRESS 4999 != EGRESS 5000"},
		{"nothing at egress", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{}
		}), "no packet counted at egress"},
		{"ext ok", with(func(m *measurement) {
			m.rule, m.counters = ruleExt, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FOUND": 5000}
		}), ""},
		{"ext not found", with(func(m *measurement) {
			m.rule = ruleExt
			m.counters = map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FOUND": 4990, "FIND_FAIL": 10}
		}), "FOUND 4990, INGRESS 5000, EGRESS 5000: the extension was not found on every packet (FIND_FAIL 10)"},
		{"ext ingress short", with(func(m *measurement) {
			m.rule, m.counters = ruleExt, map[string]uint64{"INGRESS": 4000, "EGRESS": 5000, "FOUND": 4000}
		}), "FOUND 4000, INGRESS 4000, EGRESS 5000"},
		{"reap exact ok", with(func(m *measurement) {
			m.rule, m.counters = ruleReapExact, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FREE_REAPED": 5000}
		}), ""},
		{"reap exact leak", with(func(m *measurement) {
			m.rule, m.counters = ruleReapExact, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FREE_REAPED": 4997}
		}), "FREE_REAPED 4997 != EGRESS 5000"},
		{"reap exact with copies", with(func(m *measurement) {
			m.rule = ruleReapExact
			m.counters = map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "COPY": 7, "FREE_REAPED": 5007}
		}), ""},
		{"copies not reaped", with(func(m *measurement) {
			m.rule = ruleReapExact
			m.counters = map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "COPY": 7, "FREE_REAPED": 5000}
		}), "FREE_REAPED 5000 != EGRESS 5000 + COPY 7"},
		{"reap exact update errors", with(func(m *measurement) {
			m.rule = ruleReapExact
			m.counters = map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FREE_REAPED": 5000, "UPDATE_ERROR": 3}
		}), "UPDATE_ERROR 3"},
		{"lru lower bound", with(func(m *measurement) {
			m.rule, m.counters = ruleReapBound, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FREE_REAPED": 4000}
		}), ""},
		{"lru over-reaped", with(func(m *measurement) {
			m.rule, m.counters = ruleReapBound, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000, "FREE_REAPED": 5001}
		}), "FREE_REAPED 5001 > EGRESS 5000 + COPY 0"},
		{"lo errors", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000}
			m.lo.RxDropped, m.lo.TxErrors = 2, 1
		}), "lo: tx_errors 1, rx_dropped 2"},
		{"fell short", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000}
			m.lo.RxPackets = 3000
		}), "lo received 3000 packets in the window, 4000 planned"},
		{"stall", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000}
			m.perSecond = []uint64{1000, 1000, 400, 1000}
		}), "stall: second 3 of the window had 400 packets, median 1000"},
		{"no samples", with(func(m *measurement) {
			m.rule, m.counters = ruleFloor, map[string]uint64{"INGRESS": 5000, "EGRESS": 5000}
			m.perSecond = nil
		}), "no per-second packet samples"},
	}
	for _, c := range cases {
		valid, why := validate(c.m)
		if c.want == "" {
			if !valid || why != "" {
				t.Errorf("%s: invalid (%s), want valid", c.name, why)
			}
			continue
		}
		if valid || !strings.Contains(why, c.want) {
			t.Errorf("%s: valid=%v %q, want invalid containing %q", c.name, valid, why, c.want)
		}
	}
}

func TestCoarseClock(t *testing.T) {
	fine := []wire.ProgStat{
		{Name: "w", Type: "sched_cls", RunTimeNs: 16_000_000, RunCnt: 7000},
		{Name: "r", Type: "sched_cls", RunTimeNs: 3_629_723, RunCnt: 7000},
	}
	if s := coarseClock(fine); s != "" {
		t.Errorf("fine clock flagged: %s", s)
	}
	// What a jiffies sched_clock (HZ=250) produced in a TCG guest.
	ticks := []wire.ProgStat{
		{Name: "hash_consume", Type: "tracing", RunTimeNs: 16_000_000, RunCnt: 7083},
		{Name: "hash_kfree", Type: "tracing"},
		{Name: "hash_read", Type: "sched_cls", RunTimeNs: 4_000_000, RunCnt: 7080},
		{Name: "hash_write", Type: "sched_cls", RunTimeNs: 16_000_000, RunCnt: 7080},
	}
	if s := coarseClock(ticks); !strings.Contains(s, "whole number of milliseconds") {
		t.Errorf("tick-quantised stats: %q", s)
	}
	zero := []wire.ProgStat{{Name: "cnt_egress", Type: "sched_cls", RunCnt: 6965}, {Name: "cnt_ingress", Type: "sched_cls", RunCnt: 6965}}
	if s := coarseClock(zero); !strings.Contains(s, "cnt_egress ran 6965 times in 0 ns") {
		t.Errorf("zero run time: %q", s)
	}
	m := measurement{progs: zero, rule: ruleFloor, counters: map[string]uint64{"INGRESS": 1, "EGRESS": 1},
		perSecond: []uint64{1}, lo: wire.LoStat{RxPackets: 10}}
	if valid, why := validate(m); valid || !strings.Contains(why, "too coarse") {
		t.Errorf("validate with a coarse clock: %v %q", valid, why)
	}
}

func TestStallMedian(t *testing.T) {
	// Even count: the median is the mean of the middle two (100, 300 ->
	// 200), so 99 is a stall and 100 is not.
	if s := stall([]uint64{100, 300, 300, 100}); s != "" {
		t.Errorf("stall(100,300,300,100) = %q, want none", s)
	}
	if s := stall([]uint64{99, 300, 300, 100}); !strings.Contains(s, "second 1") {
		t.Errorf("stall(99,...) = %q, want second 1", s)
	}
}
