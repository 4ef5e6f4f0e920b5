package wire

import (
	"strings"
	"testing"
)

func TestCheckVariant(t *testing.T) {
	for _, n := range []string{"cnt", "gtpchurn", "gtp-gtpchurn", "lru"} {
		if err := CheckVariant(n); err != nil {
			t.Errorf("CheckVariant(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range []string{"nosuch", "", "gtp-", "cnt2"} {
		err := CheckVariant(n)
		if err == nil || !strings.Contains(err.Error(), "known: none, cnt, ext, gtp, gtpchurn, gtplru, hash, lru") {
			t.Errorf("CheckVariant(%q) = %v, want an error listing the known variants", n, err)
		}
	}
	if err := CheckVariants([]string{"cnt", "cnt"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("CheckVariants(cnt, cnt) = %v, want named twice", err)
	}
}
