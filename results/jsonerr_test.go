package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run.json with a value of the wrong type or broken JSON is named, with
// the field, in plain words: not Go's type names.
func TestLoadSaysWhatIsWrongWithRunJSON(t *testing.T) {
	for text, want := range map[string]string{
		`{"schema": "x"}`:         "run.json: schema holds a JSON string, where kci wants a whole number",
		`{"schema": 3, "id": 5}`:  "run.json: id holds a JSON number, where kci wants a string",
		`{"schema": 3, "id": "a"`: "run.json: not valid JSON at byte",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, RunFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, want)) || strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: error %v, want %q", text, err, want)
		}
	}
}
