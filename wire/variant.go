package wire

import (
	"fmt"
	"slices"
	"strings"
)

// The benchmark variants the guest agent knows. The host checks --variants
// and kci.yaml's bench.variants against them before any build; the
// guest's table (suite/bench/variants.go) is tested to list exactly these
// names, in this order.

// NoneVariant is the baseline variant: no program attached.
const NoneVariant = "none"

// VariantNames are the variants, in the order the guest runs them.
var VariantNames = []string{NoneVariant, "cnt", "ext", "gtp", "gtpchurn", "gtplru", "hash", "lru"}

// StockVariants need nothing of a tree: the counter floor and the stock
// map types every kernel has. They are no tree's design, whichever trees
// a run happened to boot them on.
var StockVariants = []string{"cnt", "hash", "lru"}

// SeedSpread says whether a variant's costs vary with the guest's seed
// by design: the rhash variants' map hashes skb addresses with a random
// seed drawn at boot and resizes as it fills, so their per-seed costs
// fall in lumps (gtp_write: 807 and 812.5 instruction-time ns, gtpchurn's
// 807.7 and 828). Three seeds in one lump agree within an instruction
// and would pass for an exact row, so the host never decides such a
// variant's rows as exact.
func SeedSpread(name string) bool {
	switch VariantBase(name) {
	case "gtp", "gtpchurn":
		return true
	}
	return false
}

// VariantBase is the variant a name means: "cnt", or the host's
// "<tree>-<variant>" form (gtp-gtpchurn) for its last part; "" if none.
func VariantBase(name string) string {
	if slices.Contains(VariantNames, name) {
		return name
	}
	if i := strings.LastIndex(name, "-"); i >= 0 && slices.Contains(VariantNames, name[i+1:]) {
		return name[i+1:]
	}
	return ""
}

// CheckVariant refuses a name the guest would refuse, listing the known
// ones.
func CheckVariant(name string) error {
	if VariantBase(name) == "" {
		return fmt.Errorf("unknown variant %q (known: %s)", name, strings.Join(VariantNames, ", "))
	}
	return nil
}

// CheckVariants checks every name and refuses one named twice.
func CheckVariants(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if err := CheckVariant(n); err != nil {
			return err
		}
		if seen[n] {
			return fmt.Errorf("variant %q named twice", n)
		}
		seen[n] = true
	}
	return nil
}
