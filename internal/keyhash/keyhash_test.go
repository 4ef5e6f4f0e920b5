package keyhash

import "testing"

// The keys of existing caches, computed outside Go (printf | sha256sum): a
// change here rebuilds every cached kernel and image, so it must be
// deliberate.
func TestStringsIsStable(t *testing.T) {
	cases := []struct {
		parts []string
		want  string
	}{
		{nil, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{[]string{"image/v1", "a", "b"}, "eabadaa998a3c1ee0fb92cec2cbaff6cc25ea77a9b5a02b0f78140b0c9487efa"},
	}
	for _, c := range cases {
		if got := Strings(c.parts...); got != c.want {
			t.Errorf("Strings(%q) = %s, want %s", c.parts, got, c.want)
		}
	}
	if Strings("ab", "c") == Strings("a", "bc") {
		t.Error(`Strings("ab", "c") == Strings("a", "bc"): the parts' boundaries are lost`)
	}
}
