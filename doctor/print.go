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
	room := lines.Width - len(col)
	var b strings.Builder
	// under writes text wrapped to room after first, its other lines
	// under the detail column (with indent more).
	under := func(first, text, indent string) {
		for i, l := range strings.Split(lines.Wrap(text, room, indent), "\n") {
			if i == 0 {
				b.WriteString(first + l + "\n")
			} else {
				b.WriteString(col + l + "\n")
			}
		}
	}
	for _, c := range checks {
		head := fmt.Sprintf("%-4s  %-*s  ", strings.ToUpper(string(c.Status)), width, c.Name)
		under(head, c.Detail, "")
		if c.Fix != "" && c.Status != OK {
			under(col, "fix: "+c.Fix, "     ")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
