package tcgplugin

import (
	"reflect"
	"strings"
	"testing"
)

// goodCtx has call contexts with blocks on: a function at 0x100000
// called 5 times, calling one at 0x100040 (its own context, nested):
// the outer's counts include the inner's.
const goodCtx = `kcicount 6
vcpus 1 quantum 0
contexts 100000 100100 blocks on marks 2
cache on
model xeon-platinum-8180 l1i=32768:8:64 l1d=32768:8:64 l2=1048576:16:64 llc=40370176:11:64 lat l2=13 llc=77 dram=240
window 0 complete insns 30 mem 6 cycles 300 pcs 3 ctxs 2 splits 0 nests 0
ctx 100000 0 5 20 4 200
ctx 100040 0 5 10 2 100
pc 10 10 2 100 1 1c 0 0 1 0 0 0 0 0 0
pc 100000 10 2 100 5 100010 0 0 5 0 100000 5 0 0 0
pc 100040 10 2 100 5 100050 0 2 3 0 100040 3 100000 1 1
exit
`

// goodCtxMulti has two vCPUs: a target's lines, one per vCPU that ran
// it, add up to its Context.
const goodCtxMulti = `kcicount 6
vcpus 2 quantum 1000
contexts ffffffffa0000000 ffffffffff000000 blocks off marks 0
cache off
window 0 complete insns 10 mem 2 cycles 0 pcs 2 ctxs 3 splits 0 nests 0
vcpu 0 insns 4 mem 1 cycles 0
vcpu 1 insns 6 mem 1 cycles 0
ctx ffffffffa0001000 0 1 4 1 0
ctx ffffffffa0001000 1 2 6 1 0
ctx ffffffffa0002000 1 1 2 0 0
pc ffffffffa0001000 4 1 0 1 ffffffffa000101c
pc ffffffffa0002000 6 1 0 2 ffffffffa000202e
turns 7 coherence xfers 0 upgrades 0 invalidations 0 locked 0
exit
`

func TestParseContexts(t *testing.T) {
	c, err := Parse(strings.NewReader(goodCtx))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Contexts != (CtxRange{Lo: 0x100000, Hi: 0x100100, Blocks: true, Marks: 2}) {
		t.Errorf("Contexts = %+v", *c.Contexts)
	}
	w := c.Windows[0]
	want := []Context{
		{Target: 0x100000, Calls: 5, Insns: 20, Mem: 4, Cycles: 200},
		{Target: 0x100040, Calls: 5, Insns: 10, Mem: 2, Cycles: 100},
	}
	if !reflect.DeepEqual(w.Contexts, want) {
		t.Errorf("Contexts:\n got %+v\nwant %+v", w.Contexts, want)
	}
	if w.PCs[0].In != (ClassCounts{ClassSyscall: 1}) || w.PCs[2].In != (ClassCounts{ClassSoftIRQ: 2, ClassSyscall: 3}) {
		t.Errorf("In %v %v, want a syscall entry, then 2 in softirq and 3 in syscall", w.PCs[0].In, w.PCs[2].In)
	}
	if p := w.PCs[2]; p.Calls != [2]CallEntries{{0x100040, 3}, {0x100000, 1}} || p.CallsOther != 1 {
		t.Errorf("calls %v other %d, want 3 in 100040's, 1 in 100000's, 1 in another's", p.Calls, p.CallsOther)
	}
	bs := w.Blocks(func(target uint64) bool { return target == 0x100040 })
	if bs[2].Prog != 3 || bs[1].Prog != 0 || bs[2].In != w.PCs[2].In {
		t.Errorf("blocks %+v: want 3 entries in programs' calls at 100040", bs)
	}

	c, err = Parse(strings.NewReader(goodCtxMulti))
	if err != nil {
		t.Fatal(err)
	}
	want = []Context{
		{Target: 0xffffffffa0001000, Calls: 3, Insns: 10, Mem: 2, PerVCPU: []CtxVCPU{{0, 1, 4, 1, 0}, {1, 2, 6, 1, 0}}},
		{Target: 0xffffffffa0002000, Calls: 1, Insns: 2, PerVCPU: []CtxVCPU{{1, 1, 2, 0, 0}}},
	}
	if got := c.Windows[0].Contexts; !reflect.DeepEqual(got, want) {
		t.Errorf("Contexts:\n got %+v\nwant %+v", got, want)
	}
	if c.Contexts.Blocks || c.Windows[0].PCs[0].In != (ClassCounts{}) {
		t.Errorf("blocks off, yet %+v %+v", c.Contexts, c.Windows[0].PCs[0])
	}
}

// Each bad input breaks one line of goodCtx or goodCtxMulti; the error
// names that line.
func TestParseContextsBad(t *testing.T) {
	r := strings.Replace
	for _, tc := range []struct{ name, in, line string }{
		{"contexts fields", r(goodCtx, "100100 blocks on", "blocks on", 1), "line 3: want contexts off or"},
		{"contexts blocks", r(goodCtx, "blocks on", "blocks maybe", 1), "line 3: want contexts off or"},
		{"contexts empty", r(goodCtx, "contexts 100000 100100", "contexts 100100 100000", 1), "line 3: contexts range 100100-100000 is empty"},
		{"contexts hex", r(goodCtx, "contexts 100000", "contexts 10000g", 1), "line 3: bad number"},
		{"contexts late", r(goodCtx, "contexts 100000 100100 blocks on marks 2\ncache on\n", "cache on\ncontexts 100000 100100 blocks on marks 2\n", 1), "line 3: cache line must be line 4"},
		{"ctxs with contexts off", r(r(goodOff, "contexts off\n", "contexts off\n", 1), "pcs 2 ctxs 0", "pcs 2 ctxs 1", 1), "line 5: 1 ctx and 0 nest lines with contexts off"},
		{"ctx fields", r(goodCtx, "ctx 100040 0 5 10 2 100", "ctx 100040 0 5 10 2", 1), "line 8: want ctx <target>"},
		{"ctx hex", r(goodCtx, "ctx 100040", "ctx 10004g", 1), "line 8: bad number"},
		{"ctx number", r(goodCtx, "ctx 100040 0 5 10", "ctx 100040 0 5 1x", 1), "line 8: bad number"},
		{"ctx vcpu", r(goodCtx, "ctx 100040 0", "ctx 100040 1", 1), "line 8: ctx vcpu \"1\": want 0 to 0"},
		{"ctx outside", r(goodCtx, "ctx 100040", "ctx 100100", 1), "line 8: ctx 100100 outside the contexts range"},
		{"ctx unsorted", r(goodCtx, "ctx 100040", "ctx 100000", 1), "line 8: ctx 100000 vcpu 0 not after 100000 vcpu 0"},
		{"ctx vcpus unsorted", r(goodCtxMulti, "ctx ffffffffa0001000 1", "ctx ffffffffa0001000 0", 1), "line 9: ctx ffffffffa0001000 vcpu 0 not after"},
		{"ctx over window", r(goodCtx, "ctx 100000 0 5 20 4 200", "ctx 100000 0 5 31 4 200", 1), "line 7: ctx 100000 vcpu 0: insns 31 mem 4 cycles 200, more than"},
		{"ctx over vcpu", r(goodCtxMulti, "ctx ffffffffa0001000 0 1 4 1 0", "ctx ffffffffa0001000 0 1 5 1 0", 1), "line 8: ctx ffffffffa0001000 vcpu 0: insns 5"},
		{"ctx calls", r(goodCtx, "ctx 100040 0 5 10", "ctx 100040 0 11 10", 1), "line 8: ctx 100040 vcpu 0: 11 calls for 10 instructions"},
		{"ctx cycles", r(goodCtx, "ctx 100040 0 5 10 2 100", "ctx 100040 0 5 10 2 9", 1), "line 8: ctx 100040 vcpu 0: cycles 9 below its 10 instructions"},
		{"ctx cycles without cache", r(goodCtxMulti, "ctx ffffffffa0002000 1 1 2 0 0", "ctx ffffffffa0002000 1 1 2 0 1", 1), "line 10: cycles 1 without the cache model"},
		{"ctx missing", r(goodCtx, "ctx 100040 0 5 10 2 100\n", "", 1), "line 8: \"pc\" inside window 0, which expects 1 more ctx lines"},
		{"ctx extra", r(goodCtx, "ctxs 2", "ctxs 1", 1), "line 8: \"ctx\" inside window 0, which expects 3 more pc lines"},
		{"ctx before vcpu", r(goodCtxMulti, "vcpu 1 insns 6 mem 1 cycles 0\nctx ffffffffa0001000 0 1 4 1 0\n", "ctx ffffffffa0001000 0 1 4 1 0\nvcpu 1 insns 6 mem 1 cycles 0\n", 1), "line 7: \"ctx\" inside window 0, which expects 1 more vcpu lines"},
		{"ctx outside a window", r(goodCtx, "exit\n", "ctx 100000 0 0 0 0 0\nexit\n", 1), "line 12: ctx line outside a window's block"},
		{"ctx truncated", goodCtx[:strings.Index(goodCtx, "ctx 100040")], "line 7: window 0 ends after 0 of its pc lines"},
		{"pc without contexts", r(goodCtx, " 100050 0 2 3 0 100040 3 100000 1 1\n", " 100050 0 2 3 0 100040 3 100000 1\n", 1), "line 11: want pc <addr> <insns> <mem> <cycles> <execs> <end> then 4 entries by stack class"},
		{"pc cexecs with blocks off", r(goodCtxMulti, "ffffffffa000101c\n", "ffffffffa000101c 1\n", 1), "line 11: want pc <addr> <insns> <mem> <cycles> <execs> <end>"},
		{"pc classes number", r(goodCtx, " 100050 0 2 3 0 ", " 100050 0 x 3 0 ", 1), "line 11: bad number"},
		{"pc classes over execs", r(goodCtx, " 100050 0 2 3 0 ", " 100050 1 2 3 0 ", 1), "line 11: pc 100040: 6 entries in stack classes of 5 entries"},
		{"pc calls over execs", r(goodCtx, "100000 1 1\n", "100000 1 2\n", 1), "line 11: pc 100040: 3 + 1 + 2 entries in calls of 5 entries"},
		{"pc calls of no target", r(goodCtx, "100000 5 0 0 0\n", "100000 5 0 1 0\n", 1), "line 10: pc 100000: 1 entries in calls of no target"},
		{"pc calls outside the range", r(goodCtx, "100040 3 100000 1 1\n", "100040 3 200000 1 1\n", 1), "line 11: pc 100040: calls of target 200000, outside the contexts range"},
		{"pc call target number", r(goodCtx, "100040 3 100000", "10004g 3 100000", 1), "line 11: bad number"},
		{"contexts marks", r(goodCtx, "marks 2", "marks x", 1), "line 3: contexts marks \"x\""},
		{"contexts marks without blocks", r(goodCtxMulti, "blocks off marks 0", "blocks off marks 1", 1), "line 3: contexts marks \"1\": want a count, 0 with blocks off"},
	} {
		c, err := Parse(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: Parse succeeded: %+v", tc.name, c)
			continue
		}
		if !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.line)
		}
	}
}
