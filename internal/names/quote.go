package names

import (
	"strconv"
	"strings"
)

// Quote renders an untrusted string for a log line or an error: Go-quoted
// and ASCII-only (a newline cannot start a new line, a control character
// cannot move the cursor), capped, and with "::" split so the GitHub
// Actions runner cannot read it as a workflow command (::error::,
// ::add-mask::, ::stop-commands::).
func Quote(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	q := strconv.QuoteToASCII(s)
	return strings.ReplaceAll(q, "::", `:\:`)
}
