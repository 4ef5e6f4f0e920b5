package bpf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// kernelBTF builds a BTF blob holding only enum bpf_map_type with vals.
func kernelBTF(t *testing.T, vals ...btf.EnumValue) *btf.Spec {
	t.Helper()
	b, err := btf.NewBuilder([]btf.Type{&btf.Enum{Name: "bpf_map_type", Size: 4, Values: vals}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestUseRHash(t *testing.T) {
	gtpKernel := kernelBTF(t,
		btf.EnumValue{Name: "BPF_MAP_TYPE_HASH", Value: 1},
		btf.EnumValue{Name: "BPF_MAP_TYPE_RHASH", Value: 34})
	spec, err := Spec(Gtp)
	if err != nil {
		t.Fatal(err)
	}
	if err := UseRHash(spec, gtpKernel, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	m := spec.Maps[RHashMap]
	if m.Type != ebpf.MapType(34) || m.MapExtra != 0 || m.MaxEntries != 1<<20 {
		t.Fatalf("rhash = type %v extra %d entries %d, want 34/0/%d", m.Type, m.MapExtra, m.MaxEntries, 1<<20)
	}
	if m.Flags&1 == 0 { // BPF_F_NO_PREALLOC
		t.Errorf("rhash lost BPF_F_NO_PREALLOC: flags %#x", m.Flags)
	}

	// The committed object declares the hint variant.
	fresh, _ := Spec(Gtp)
	if got := fresh.Maps[RHashMap]; got.MapExtra != 16384 || got.MaxEntries != 16384 {
		t.Errorf("gtp object's rhash: extra %d entries %d, want 16384/16384", got.MapExtra, got.MaxEntries)
	}

	stock := kernelBTF(t, btf.EnumValue{Name: "BPF_MAP_TYPE_HASH", Value: 1})
	if err := UseRHash(fresh, stock, 16384, 16384); !errors.Is(err, ErrNoMapType) {
		t.Fatalf("UseRHash on a stock kernel: %v, want ErrNoMapType", err)
	}
}

func TestObjectsLayout(t *testing.T) {
	for _, o := range objects() {
		spec, err := Spec(o)
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		if len(spec.Programs) == 0 {
			t.Errorf("%s: no programs", o)
		}
		if o == Survive {
			if m := spec.Maps[SurvResMap]; m == nil || m.MaxEntries != ResMax {
				t.Errorf("survive: res map missing or not %d entries", ResMax)
			}
			continue
		}
		m := spec.Maps[StatsMap]
		if m == nil || m.Type != ebpf.PerCPUArray || m.MaxEntries != StatMax {
			t.Errorf("%s: stats map %+v, want per-CPU array of %d", o, m, StatMax)
		}
		if n := len(Counters(o)); n > StatMax {
			t.Errorf("%s: %d counter names for %d keys", o, n, StatMax)
		}
		for name, p := range spec.Programs {
			if len(name) > 15 {
				t.Errorf("%s: program name %s longer than the kernel keeps (15)", o, name)
			}
			if p.Type != ebpf.SchedCLS && p.Type != ebpf.Tracing {
				t.Errorf("%s: program %s has type %v", o, name, p.Type)
			}
		}
	}
}
