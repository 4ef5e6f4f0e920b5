// Package lines cuts text into the lines shown to a user: the first line
// of an error as its one-line cause, the last lines of a tool's output as
// the evidence of its failure.
package lines

import "strings"

// First is s up to its first newline.
func First(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Last is the last n lines of s, trailing newlines dropped.
func Last(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
