// Package variant names the benchmark variants the guest agent knows. It is
// a leaf: the host checks --variants and kci.yaml's bench.variants against
// it before any build, without linking the guest's BPF loading code; the
// guest's table (suite/variants.go) is tested to list exactly these names,
// in this order.
package variant

import (
	"fmt"
	"slices"
	"strings"
)

// Names are the variants, in the order the guest runs them.
var Names = []string{"none", "cnt", "ext", "gtp", "gtpchurn", "gtplru", "hash", "lru"}

// Base is the variant a name means: "cnt", or the host's
// "<tree>-<variant>" form (gtp-gtpchurn) for its last part; "" if none.
func Base(name string) string {
	if slices.Contains(Names, name) {
		return name
	}
	if i := strings.LastIndex(name, "-"); i >= 0 && slices.Contains(Names, name[i+1:]) {
		return name[i+1:]
	}
	return ""
}

// Check refuses a name the guest would refuse, listing the known ones.
func Check(name string) error {
	if Base(name) == "" {
		return fmt.Errorf("unknown variant %q (known: %s)", name, strings.Join(Names, ", "))
	}
	return nil
}

// CheckAll checks every name and refuses one named twice.
func CheckAll(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if err := Check(n); err != nil {
			return err
		}
		if seen[n] {
			return fmt.Errorf("variant %q named twice", n)
		}
		seen[n] = true
	}
	return nil
}
