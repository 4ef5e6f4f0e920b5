package tcgplugin

import (
	"reflect"
	"strings"
	"testing"
)

// goodOff's window 0 is `mov $1000, %ecx; 1: dec %ecx; jnz 1b` at
// 0x401000 (5 + 2 + 2 bytes): the first block runs all three once, then
// the loop's block (dec, jnz) is entered 999 times. Window 1's second
// block is an I/O instruction QEMU re-ran alone under icount: its access
// and nothing else.
const goodOff = `kcicount 6
vcpus 1 quantum 0
contexts off
cache off
window 0 complete insns 2001 mem 0 cycles 0 pcs 2 ctxs 0 splits 0 nests 0
pc 401000 3 0 0 1 401009
pc 401005 1998 0 0 999 401009
stray
window 1 incomplete insns 7 mem 4 cycles 0 pcs 2 ctxs 0 splits 0 nests 0
pc ffffffff81000000 7 3 0 1 ffffffff8100001c
pc ffffffff81000040 0 1 0 0 ffffffff81000042
exit
`

const goodOn = `kcicount 6
vcpus 1 quantum 0
contexts off
cache on
model xeon-platinum-8180 l1i=32768:8:64 l1d=32768:8:64 l2=1048576:16:64 llc=40370176:11:64 lat l2=13 llc=77 dram=240
window 0 complete insns 10 mem 2 cycles 263 pcs 2 ctxs 0 splits 0 nests 0
pc 10 4 1 4 1 1c
pc 20 6 1 259 2 2e
`

func TestParseGood(t *testing.T) {
	c, err := Parse(strings.NewReader(goodOff))
	if err != nil {
		t.Fatal(err)
	}
	want := &Counts{
		Version: 6,
		VCPUs:   1,
		Windows: []Window{
			{Index: 0, Insns: 2001, PCs: []PC{
				{Addr: 0x401000, Insns: 3, Execs: 1, End: 0x401009},
				{Addr: 0x401005, Insns: 1998, Execs: 999, End: 0x401009},
			}},
			{Index: 1, Insns: 7, Mem: 4, Incomplete: true, PCs: []PC{
				{Addr: 0xffffffff81000000, Insns: 7, Mem: 3, Execs: 1, End: 0xffffffff8100001c},
				{Addr: 0xffffffff81000040, Mem: 1, End: 0xffffffff81000042},
			}},
		},
		StrayEnds: 1,
		Exited:    true,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", c, want)
	}
	if s := c.Windows[0].Sum(0x401001, 0x402000); s != (PC{Addr: 0x401001, Insns: 1998}) {
		t.Errorf("Sum = %+v", s)
	}
	// The loop's first iteration ran in the first block, the other 999
	// in the loop's own: Runs is the most any block holding the range
	// was entered.
	if r := c.Windows[0].Blocks(nil).Runs(0x401005, 0x401009); r != 999 {
		t.Errorf("Runs(loop) = %d, want 999", r)
	}
	if r := c.Windows[0].Blocks(nil).Runs(0x401000, 0x401005); r != 1 {
		t.Errorf("Runs(mov) = %d, want 1", r)
	}

	c, err = Parse(strings.NewReader(goodOn))
	if err != nil {
		t.Fatal(err)
	}
	wantModel := &Model{
		Name: "xeon-platinum-8180",
		L1i:  Geometry{32768, 8, 64}, L1d: Geometry{32768, 8, 64},
		L2: Geometry{1048576, 16, 64}, LLC: Geometry{40370176, 11, 64},
		LatL2: 13, LatLLC: 77, LatDRAM: 240,
	}
	if !c.Cache || c.Exited || !reflect.DeepEqual(c.Model, wantModel) {
		t.Errorf("cache %v exited %v model %+v", c.Cache, c.Exited, c.Model)
	}
	if w := c.Windows[0]; w.Cycles != 263 || w.Sum(0x20, 0x21).Cycles != 259 {
		t.Errorf("window 0 = %+v", w)
	}
}

// Each bad input is a good one with one line broken; the error must name
// that line.
func TestParseBad(t *testing.T) {
	for _, tc := range []struct {
		name, in, line string
	}{
		{"empty", "", "empty output"},
		{"not ours", "hello 1\n", "line 1:"},
		{"version", "kcicount 1\ncache off\n", "line 1: format version 1, this kci reads 6"},
		{"version 2", "kcicount 2\ncache off\n", "line 1: format version 2"},
		{"version 3", "kcicount 3\nvcpus 1 quantum 0\ncache off\n", "line 1: format version 3"},
		{"version number", "kcicount x\n", "line 1:"},
		{"cache value", "kcicount 6\nvcpus 1 quantum 0\ncontexts off\ncache maybe\n", "line 4:"},
		{"no model", "kcicount 6\nvcpus 1 quantum 0\ncontexts off\ncache on\nwindow 0 complete insns 0 mem 0 cycles 0 pcs 0 ctxs 0 splits 0 nests 0\n", "line 5:"},
		{"header ends", "kcicount 6\nvcpus 1 quantum 0\ncontexts off\ncache on\n", "line 4: output ends inside the header"},
		{"unknown kind", strings.Replace(goodOff, "stray\n", "bogus 1\n", 1), "line 8: unknown line kind"},
		{"bad number", strings.Replace(goodOff, "pc 401005 1998", "pc 401005 19x8", 1), "line 7: bad number"},
		{"bad execs", strings.Replace(goodOff, " 999 401009", " -1 401009", 1), "line 7: bad number"},
		{"bad end", strings.Replace(goodOff, " 999 401009", " 999 40100g", 1), "line 7: bad number"},
		{"format 1 pc", strings.Replace(goodOff, " 999 401009", "", 1), "line 7: pc line without execs and end"},
		{"pc fields", strings.Replace(goodOff, " 999 401009", " 999 401009 1", 1), "line 7: want pc <addr>"},
		{"end before addr", strings.Replace(goodOff, " 999 401009", " 999 401004", 1), "line 7: pc 401005: end 401004 not after it"},
		{"empty block", strings.Replace(goodOff, " 999 401009", " 999 401005", 1), "line 7: pc 401005: end 401005 not after it"},
		{"execs over insns", strings.Replace(goodOff, " 999 401009", " 1999 401009", 1), "line 7: pc 401005: 1999 entries for 1998 instructions"},
		{"insns not entered", strings.Replace(goodOff, " 999 401009", " 0 401009", 1), "line 7: pc 401005: 0 entries for 1998"},
		{"entered, no insns", strings.Replace(goodOff, "81000040 0 1 0 0", "81000040 0 1 0 1", 1), "line 11: pc ffffffff81000040: 1 entries for 0"},
		{"bad hex", strings.Replace(goodOff, "pc 401005", "pc 40g005", 1), "line 7: bad number"},
		{"out of order", strings.Replace(goodOff, "window 1 ", "window 2 ", 1), "line 9: window 2 out of order"},
		{"pcs unsorted", strings.Replace(goodOff, "pc 401005", "pc 400fff", 1), "line 7: pc 400fff not after 401000"},
		{"sum mismatch", strings.Replace(goodOff, "insns 2001", "insns 2002", 1), "line 7: window 0: pc lines sum"},
		{"truncated block", "kcicount 6\nvcpus 1 quantum 0\ncontexts off\ncache off\nwindow 0 complete insns 1 mem 0 cycles 0 pcs 2 ctxs 0 splits 0 nests 0\npc 1 1 0 0 1 2\n", "line 6: window 0 ends after 1"},
		{"interleaved", strings.Replace(goodOff, "pc 401005 ", "stray\npc 401005 ", 1), "line 7: \"stray\" inside window 0"},
		{"after exit", goodOff + "stray\n", "line 13: \"stray\" after exit"},
		{"cycles without cache", strings.Replace(goodOff, "cycles 0 pcs 2 ctxs 0 splits 0 nests 0\npc ffff", "cycles 5 pcs 2 ctxs 0 splits 0 nests 0\npc ffff", 1), "line 9: cycles 5"},
		{"pc cycles without cache", strings.Replace(goodOff, "pc 401005 1998 0 0", "pc 401005 1998 0 5", 1), "line 7: cycles 5"},
		{"completeness", strings.Replace(goodOff, "0 complete", "0 done", 1), "line 5: want complete or incomplete"},
		{"model field", strings.Replace(goodOn, "l2=1048576:16:64", "l2=1048576:16", 1), "line 5: l2: want 3 numbers"},
		{"latency", strings.Replace(goodOn, "dram=240", "dram=x", 1), "line 5: latency dram"},
		{"stray fields", strings.Replace(goodOff, "stray\n", "stray 3\n", 1), "line 8: stray takes no fields"},
		{"blank", strings.Replace(goodOff, "stray\n", "\n", 1), "line 8: empty line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if !strings.Contains(err.Error(), tc.line) {
				t.Errorf("error %q does not contain %q", err, tc.line)
			}
		})
	}
}

func TestMarkBytes(t *testing.T) {
	if got, want := MarkBytes(MarkStart), [8]byte{0x0f, 0x1f, 0x84, 0x00, 0x01, 0x00, 0x43, 0x4b}; got != want {
		t.Errorf("MarkBytes(MarkStart) = % x, want % x", got, want)
	}
	if got, want := MarkBytes(MarkEnd), [8]byte{0x0f, 0x1f, 0x84, 0x00, 0x02, 0x00, 0x43, 0x4b}; got != want {
		t.Errorf("MarkBytes(MarkEnd) = % x, want % x", got, want)
	}
}

func TestArgs(t *testing.T) {
	if got, want := Args("/p/k.so", "/o/c.txt", Options{}), []string{"-plugin", "file=/p/k.so,out=/o/c.txt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if got, want := Args("/p/k.so", "/o/c.txt", Options{Cache: true, ArmAtMarker: true}), []string{"-plugin", "file=/p/k.so,out=/o/c.txt,cache=on,arm=marker"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if got, want := Args("/p,q/k.so", "/o,,/c.txt", Options{}), []string{"-plugin", "file=/p,,q/k.so,out=/o,,,,/c.txt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	for _, c := range []struct {
		o    Options
		tail string
	}{
		{Options{NoCtx: true}, ",ctx=off"},
		{Options{Cache: true, Coherent: true, SMT2: true, Quantum: 1000, NoCtx: true}, ",cache=coherent,smt=2,quantum=1000,ctx=off"},
		{Options{NoCtx: true, Ctx: CtxRange{Lo: 1, Hi: 2, Blocks: true}}, ",ctx=off"},
		{Options{Ctx: CtxRange{Lo: 0x100000, Hi: 0x101040, Blocks: true}}, ",ctx=100000-101040,ctxblocks=on"},
		{Options{Ctx: CtxRange{Blocks: true}}, ",ctxblocks=on"},
		{Options{Ctx: CtxRange{Blocks: true}, Marks: []Mark{{ClassSoftIRQ, 0xffffffff81000000}, {ClassSyscall, 0x10}}},
			",ctxblocks=on,mark=softirq@ffffffff81000000,mark=syscall@10"},
		{Options{Marks: []Mark{{ClassSoftIRQ, 0x10}}}, ""}, // marks count entries: nothing without blocks
	} {
		if got, want := Args("/p/k.so", "/o/c.txt", c.o), []string{"-plugin", "file=/p/k.so,out=/o/c.txt" + c.tail}; !reflect.DeepEqual(got, want) {
			t.Errorf("Args(%+v) = %q, want %q", c.o, got, want)
		}
	}
}

// goodMulti is a two-vCPU run with the coherent model and a quantum.
const goodMulti = `kcicount 6
vcpus 2 quantum 1000
contexts off
cache coherent
model xeon-platinum-8180-coherent l1i=32768:8:64 l1d=32768:8:64 l2=1048576:16:64 llc=40370176:11:64 lat l2=13 llc=77 dram=240 xfer=119 upgrade=77 lock=18 cores=2
window 0 complete insns 10 mem 2 cycles 263 pcs 2 ctxs 0 splits 0 nests 0
vcpu 0 insns 4 mem 1 cycles 4
vcpu 1 insns 6 mem 1 cycles 259
pc 10 4 1 4 1 1c 0
pc 20 6 1 259 2 2e 2
turns 7 coherence xfers 3 upgrades 2 invalidations 4 locked 5
exit
`

func TestParseVCPUs(t *testing.T) {
	c, err := Parse(strings.NewReader(goodMulti))
	if err != nil {
		t.Fatal(err)
	}
	if c.VCPUs != 2 || c.Quantum != 1000 || !c.Cache || !c.Coherent || c.Model.LatXfer != 119 || c.Model.Cores != 2 {
		t.Errorf("header: %+v model %+v", c, c.Model)
	}
	want := []VCPU{{4, 1, 4}, {6, 1, 259}}
	if !reflect.DeepEqual(c.Windows[0].PerVCPU, want) {
		t.Errorf("PerVCPU = %+v, want %+v", c.Windows[0].PerVCPU, want)
	}
	if *c.Coherence != (Coherence{Turns: 7, Transfers: 3, Upgrades: 2, Invalidations: 4, Locked: 5}) {
		t.Errorf("Coherence = %+v", *c.Coherence)
	}
	if pcs := c.Windows[0].PCs; pcs[0].Coh != 0 || pcs[1].Coh != 2 {
		t.Errorf("cross-core events %d %d, want 0 2", pcs[0].Coh, pcs[1].Coh)
	}
	for _, tc := range []struct{ name, in, line string }{
		{"vcpu sum", strings.Replace(goodMulti, "vcpu 1 insns 6", "vcpu 1 insns 7", 1), "line 8: window 0: vcpu lines sum"},
		{"vcpu missing", strings.Replace(goodMulti, "vcpu 1 insns 6 mem 1 cycles 259\n", "", 1), "line 8: \"pc\" inside window 0, which expects 1 more vcpu lines"},
		{"vcpu order", strings.Replace(goodMulti, "vcpu 1 insns", "vcpu 2 insns", 1), "line 8: vcpu \"2\" out of order"},
		{"one-core model", strings.Replace(goodMulti, "cache coherent", "cache on", 1), "line 4: cache on (one core's model) with 2 vCPUs"},
		{"quantum alone", strings.Replace(goodOff, "vcpus 1 quantum 0", "vcpus 1 quantum 5", 1), "line 2: quantum 5 with one vCPU"},
		{"turns alone", strings.Replace(goodOff, "exit\n", "turns 0 coherence xfers 0 upgrades 0 invalidations 0 locked 0\nexit\n", 1), "line 12: turns line with one vCPU"},
		{"pc without cross-core events", strings.Replace(goodMulti, " 2e 2\n", " 2e\n", 1), "line 10: want pc <addr> <insns> <mem> <cycles> <execs> <end> <cross-core events> (the coherent model)"},
		{"pc cross-core events over accesses", strings.Replace(goodMulti, " 2e 2\n", " 2e 3\n", 1), "line 10: pc 20: 3 cross-core events for 1 accesses"},
		{"no vcpus line", strings.Replace(goodOff, "vcpus 1 quantum 0\n", "", 1), "line 2: contexts line must be line 3"},
	} {
		if _, err := Parse(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.line)
		}
	}
}
