package project

import (
	"strings"
	"testing"
)

// Tree names reach comment markers, file names and the privileged job's
// log; kci.yaml is where a bad one is refused first.
func TestParseRejectsBadTreeNames(t *testing.T) {
	for _, bad := range []string{`"a b"`, `"x/../y"`, `".."`, `"gtp\n::error::pwned"`, `"<!--"`, strings.Repeat("x", 65)} {
		_, err := Parse("kci.yaml", []byte("trees:\n  - name: "+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "kci.yaml:2: trees[0].name: tree name") {
			t.Errorf("tree name %s: err %v, want a refusal naming the file and the tree", bad, err)
		}
	}
	if _, err := Parse("kci.yaml", []byte("trees:\n  - name: gtp-2.x_y\n")); err != nil {
		t.Errorf("valid name refused: %v", err)
	}
}
