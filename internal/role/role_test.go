package role

import "testing"

// The names are written into run.json, bench file names and profile
// indexes: renaming one orphans every saved run.
func TestSpellingIsStable(t *testing.T) {
	if Base != "base" || Patched != "patched" {
		t.Errorf("roles are %q and %q, want base and patched as saved runs spell them", Base, Patched)
	}
}
