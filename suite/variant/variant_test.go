package variant

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, n := range []string{"cnt", "gtpchurn", "gtp-gtpchurn", "lru"} {
		if err := Check(n); err != nil {
			t.Errorf("Check(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range []string{"nosuch", "", "gtp-", "cnt2"} {
		err := Check(n)
		if err == nil || !strings.Contains(err.Error(), "known: none, cnt, ext, gtp, gtpchurn, gtplru, hash, lru") {
			t.Errorf("Check(%q) = %v, want an error listing the known variants", n, err)
		}
	}
	if err := CheckAll([]string{"cnt", "cnt"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("CheckAll(cnt, cnt) = %v, want named twice", err)
	}
}
