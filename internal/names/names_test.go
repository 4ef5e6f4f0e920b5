package names

import (
	"strings"
	"testing"
)

func TestTree(t *testing.T) {
	for _, ok := range []string{"gtp", "stock", "ext-2", "a.b_c", strings.Repeat("x", 64)} {
		if err := Tree(ok); err != nil {
			t.Errorf("Tree(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", "../x", "x\n::error::pwned", "<!--", strings.Repeat("x", 65), "gtp\u200d"} {
		err := Tree(bad)
		if err == nil {
			t.Errorf("Tree(%q) accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "::") {
			t.Errorf("error for %q is not log-safe: %q", bad, err)
		}
	}
}

func TestElementAndLocal(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "/abs"} {
		if Element("shard id", bad) == nil {
			t.Errorf("Element(%q) accepted", bad)
		}
	}
	if err := Element("shard id", "a1b2c3"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "../x", "a/../../x", "/etc/passwd"} {
		if Local("console log", bad) == nil {
			t.Errorf("Local(%q) accepted", bad)
		}
	}
	if err := Local("console log", "console/boot-1.log"); err != nil {
		t.Error(err)
	}
}

func TestQuote(t *testing.T) {
	got := Quote("gtp\n::error file=x::all green")
	if strings.ContainsAny(got, "\n\r") || strings.Contains(got, "::") {
		t.Errorf("Quote = %s", got)
	}
	if len(Quote(strings.Repeat("x", 10000))) > 300 {
		t.Errorf("Quote does not cap length")
	}
}
