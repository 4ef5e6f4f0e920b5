// Package bpf holds kci's BPF programs, compiled from c/ with bpf2go and
// committed, so building kci needs no clang. It knows the objects and their
// layouts (stats keys, survival trailer); what to attach where, and what
// the numbers mean, is the suite's business.
package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// Object names.
const (
	Cnt     = "cnt"
	Ext     = "ext"
	Gtp     = "gtp"
	GtpLRU  = "gtplru"
	Hash    = "hash"
	LRU     = "lru"
	Survive = "survive"
)

var loaders = map[string]func() (*ebpf.CollectionSpec, error){
	Cnt:     loadCnt,
	Ext:     loadExt,
	Gtp:     loadGtp,
	GtpLRU:  loadGtplru,
	Hash:    loadHash,
	LRU:     loadLru,
	Survive: loadSurvive,
}

// Spec returns a fresh, unloaded collection spec for the named object; the
// caller may modify it.
func Spec(object string) (*ebpf.CollectionSpec, error) {
	load, ok := loaders[object]
	if !ok {
		return nil, fmt.Errorf("bpf: unknown object %q", object)
	}
	return load()
}

// StatsMap is the per-CPU array every benchmark object counts into.
const StatsMap = "stats"

// Stats keys (see c/common.h). Keys 0 and 1 are common; the rest depend on
// the object family.
const (
	StatIngress = 0
	StatEgress  = 1

	StatCreateFail = 2 // ext
	StatFindFail   = 3
	StatSliceFail  = 4
	StatBadMagic   = 5
	StatFound      = 6

	StatFreeReaped  = 2 // map variants
	StatCopy        = 3
	StatUpdateError = 4
	StatMapFound    = 5
	StatMapMiss     = 6

	StatMax = 8
)

// Counter names, indexed by stats key, per object family.
var (
	commonCounters = []string{"INGRESS", "EGRESS"}
	extCounters    = []string{"INGRESS", "EGRESS", "CREATE_FAIL", "FIND_FAIL", "SLICE_FAIL", "BADMAGIC", "FOUND"}
	mapCounters    = []string{"INGRESS", "EGRESS", "FREE_REAPED", "COPY", "UPDATE_ERROR", "FOUND", "MISS"}
)

// Counters returns the names of the object's stats keys, index = key.
func Counters(object string) []string {
	switch object {
	case Ext:
		return extCounters
	case Gtp, GtpLRU, Hash, LRU:
		return mapCounters
	default:
		return commonCounters
	}
}

// MetaMagic marks the benchmark metadata (struct meta in c/common.h).
const MetaMagic = 0x5ebee55e

// Survival matrix layout (c/survive.c).
const (
	// SurvMagic opens the 16-byte trailer of a test packet; the token
	// follows. Both little-endian.
	SurvMagic   = uint64(0x5652555349434b)
	TrailerSize = 16

	SurvResMap     = "res"
	SurvCfgMap     = "cfg"
	SurvCarrierMap = "carrier"

	ResWritten    = 0
	ResWriteFail  = 1
	ResSeen       = 2
	ResOK         = 3
	ResAbsent     = 4
	ResMismatch   = 5
	ResRedirected = 6
	ResMax        = 8

	// Redirect modes for SurvCfg.Mode.
	SurvPass         = 0
	SurvRedirect     = 1
	SurvRedirectPeer = 2
)

// SurvCfg is the survive object's cfg map value.
type SurvCfg = surviveCfg

// RHashMap is the gtp object's map; its type is set at load time.
const RHashMap = "rhash"

// RHashType is the enumerator kernels with the gated-tracepoint series use
// for the rhashtable map; stock UAPI headers do not have it.
const RHashType = "BPF_MAP_TYPE_RHASH"

// ErrNoMapType means the kernel's enum bpf_map_type lacks the enumerator.
var ErrNoMapType = errors.New("map type not in kernel BTF")

// MapType resolves a map type name (e.g. BPF_MAP_TYPE_RHASH) from the
// kernel's enum bpf_map_type, for map types newer than cilium/ebpf.
func MapType(kernel *btf.Spec, name string) (ebpf.MapType, error) {
	var enum *btf.Enum
	if err := kernel.TypeByName("bpf_map_type", &enum); err != nil {
		return 0, fmt.Errorf("bpf: enum bpf_map_type: %w", err)
	}
	for _, v := range enum.Values {
		if v.Name == name {
			return ebpf.MapType(v.Value), nil
		}
	}
	return 0, fmt.Errorf("bpf: %s: %w", name, ErrNoMapType)
}

// UseRHash retypes the gtp object's map as the kernel's rhashtable map.
// hint is map_extra (the nelem hint; 0 = none), entries is max_entries;
// gtp uses 16384/16384, gtpchurn 0/1<<20.
func UseRHash(spec *ebpf.CollectionSpec, kernel *btf.Spec, hint uint64, entries uint32) error {
	m, ok := spec.Maps[RHashMap]
	if !ok {
		return fmt.Errorf("bpf: object has no %s map", RHashMap)
	}
	typ, err := MapType(kernel, RHashType)
	if err != nil {
		return err
	}
	m.Type = typ
	m.MapExtra = hint
	m.MaxEntries = entries
	return nil
}
