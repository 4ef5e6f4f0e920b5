package verdict

import (
	"fmt"
	"strings"
)

// conclusionWords are conclusions as a check run shows them, each after
// a heading naming its case: the content of a golden file.
type conclusionWords struct{ strings.Builder }

func (w *conclusionWords) add(name string, c Conclusion) {
	fmt.Fprintf(w, "== %s: %s\ntitle: %s\nsummary:\n%s\n\n", name, c.State, c.Title, c.Summary)
}
