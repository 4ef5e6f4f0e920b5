package tcgplugin

import "testing"

// Blocks add up by name; names under the share per packet fold into the
// small bucket, bucket names ('[...]') never do; largest first.
func TestByName(t *testing.T) {
	w := &Window{PCs: []PC{
		{Addr: 1, Insns: 60, Mem: 2, Cycles: 70}, {Addr: 2, Insns: 40, Cycles: 5}, // big: 100
		{Addr: 3, Insns: 4}, {Addr: 4, Insns: 1}, // tiny 0.04/pkt, tiny2 0.01/pkt
		{Addr: 5, Insns: 2}, // [user]: a bucket, kept
	}}
	names := map[uint64]string{1: "big", 2: "big", 3: "tiny", 4: "tiny2", 5: "[user]"}
	fs := w.ByName(func(a uint64) string { return names[a] }, Fold{Packets: 100, MinPerPacket: 0.05, Small: "[small]"})
	want := []Func{{Name: "big", Insns: 100, Mem: 2, Cycles: 75}, {Name: "[small]", Insns: 5}, {Name: "[user]", Insns: 2}}
	if len(fs) != len(want) {
		t.Fatalf("got %+v, want %+v", fs, want)
	}
	for i := range want {
		if fs[i] != want[i] {
			t.Errorf("[%d] = %+v, want %+v", i, fs[i], want[i])
		}
	}
	if got := w.ByName(func(a uint64) string { return names[a] }, Fold{}); len(got) != 4 {
		t.Errorf("no packets folded something: %+v", got)
	}
}
