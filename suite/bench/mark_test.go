package bench

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/kci-dev/kci/vm/tcgplugin"
)

// TestMarkBytes: the markers the agent executes are the bytes the plugin
// matches, and the displacements mark.go names.
func TestMarkBytes(t *testing.T) {
	src, err := os.ReadFile("mark_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?s)TEXT ·(\w+)\(SB\)(.*?)RET`)
	byteRE := regexp.MustCompile(`BYTE \$0x([0-9a-f]{2})`)
	got := map[string][]byte{}
	for _, m := range text.FindAllStringSubmatch(string(src), -1) {
		for _, b := range byteRE.FindAllStringSubmatch(m[2], -1) {
			v, _ := strconv.ParseUint(b[1], 16, 8)
			got[m[1]] = append(got[m[1]], byte(v))
		}
	}
	for name, disp := range map[string]uint32{"markStart": tcgplugin.MarkStart, "markEnd": tcgplugin.MarkEnd, "markArm": tcgplugin.MarkArm} {
		want := tcgplugin.MarkBytes(disp)
		if string(got[name]) != string(want[:]) {
			t.Errorf("%s executes % x, the plugin matches % x", name, got[name], want)
		}
	}
	if markStartDisp != tcgplugin.MarkStart || markEndDisp != tcgplugin.MarkEnd || markArmDisp != tcgplugin.MarkArm {
		t.Errorf("mark.go's displacements %#x, %#x, %#x; the plugin's %#x, %#x, %#x", markStartDisp, markEndDisp, markArmDisp,
			tcgplugin.MarkStart, tcgplugin.MarkEnd, tcgplugin.MarkArm)
	}
}
