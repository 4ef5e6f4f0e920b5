package doctor

import (
	"fmt"
	"io"
	"strings"

	"github.com/kci-dev/kci/internal/lines"
)

// Write prints the checks one per entry: status, name, the detail
// wrapped to lines.Width under its own column, and the fix of a check
// that is not OK on lines of its own.
func Write(w io.Writer, checks []Check) error {
	width := 0
	for _, c := range checks {
		width = max(width, len(c.Name))
	}
	// A long name would leave the detail no room: wrap under the name.
	width = min(width, 24)
	col := strings.Repeat(" ", 6+width+2)
	var b strings.Builder
	for _, c := range checks {
		head := fmt.Sprintf("%-4s  %-*s  ", strings.ToUpper(string(c.Status)), width, c.Name)
		b.WriteString(lines.Wrap(head+c.Detail, lines.Width, col) + "\n")
		if c.Fix != "" && c.Status != OK {
			b.WriteString(lines.Wrap(col+"fix: "+c.Fix, lines.Width, col+"     ") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
