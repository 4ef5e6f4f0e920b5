package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kci-dev/kci/job"
)

// helpWidth is the widest line help prints: a terminal's 100 columns,
// where cobra by default prints a flag's usage on one line of any length.
const helpWidth = 100

// jobVerbs are the verbs that exit with job's table; their help lists it.
var jobVerbs = map[string]bool{
	"test": true, "series": true, "bench": true, "build": true, "run": true,
	"profile": true, "post": true, "report": true,
}

// exitCodes is job/exit.go's table in words, for kci --help and the job
// verbs' help.
var exitCodes = []struct {
	code int
	what string
}{
	{job.ExitOK, "ok"},
	{job.ExitInternal, "kci or the machine failed; nothing is blamed on the patch"},
	{job.ExitApply, "a patch does not apply (or applies to no tree)"},
	{job.ExitBuild, "config policy violation or build failure"},
	{job.ExitBoot, "a kernel did not boot, crashed, hung or warned"},
	{job.ExitSurvival, "behaviour regression: a survival test or a benchmark's own check passes on " +
		"base and fails patched"},
	{job.ExitPerformance, "significantly slower by more than --fail-on-regression percent"},
	{job.ExitUsage, "usage error (a flag, a kci.yaml value, a file given): refused before any build " +
		"or boot"},
	{job.ExitInterrupted, "interrupted (SIGINT, SIGTERM): the results so far are kept, marked incomplete"},
}

// setHelp makes every verb's help fit helpWidth: long lines of Long and
// Short wrapped at a space, flag usages wrapped under their column, and no
// sentinel default shown ("(default -1)": the usage says what it means).
func setHelp(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		text := c.Long
		if text == "" {
			text = c.Short
		}
		w := c.OutOrStdout()
		if text != "" {
			fmt.Fprintln(w, wrapText(strings.TrimRight(text, "\n"), helpWidth))
			fmt.Fprintln(w)
		}
		writeUsage(w, c)
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		writeUsage(c.OutOrStderr(), c)
		return nil
	})
}

// writeUsage is cobra's default usage text, wrapped, plus the exit codes.
func writeUsage(w io.Writer, c *cobra.Command) {
	fmt.Fprint(w, "Usage:")
	if c.Runnable() {
		fmt.Fprintf(w, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", c.CommandPath())
	}
	fmt.Fprintln(w)
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\nAliases:\n  %s\n", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", wrapText(c.Example, helpWidth))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintln(w, "\nAvailable Commands:")
		writeCommands(w, c)
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", flagUsages(c.LocalFlags()))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal Flags:\n%s", flagUsages(c.InheritedFlags()))
	}
	if !c.HasParent() || jobVerbs[c.Name()] {
		fmt.Fprintln(w, "\nExit codes:")
		for _, e := range exitCodes {
			fmt.Fprintln(w, wrapIndent(fmt.Sprintf("  %-4d %s", e.code, e.what), helpWidth, 7))
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
}

// writeCommands lists the subcommands, each Short wrapped under its column.
func writeCommands(w io.Writer, c *cobra.Command) {
	pad := 0
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() || s.Name() == "help" {
			pad = max(pad, len(s.Name()))
		}
	}
	for _, s := range c.Commands() {
		if !s.IsAvailableCommand() && s.Name() != "help" {
			continue
		}
		line := fmt.Sprintf("  %-*s  %s", pad, s.Name(), s.Short)
		fmt.Fprintln(w, wrapIndent(line, helpWidth, pad+4))
	}
}

// flagUsages is pflag's listing wrapped at helpWidth, with a negative
// default (-1, -1ns: kci's "not set, take kci.yaml's" sentinel) left out.
func flagUsages(fs *pflag.FlagSet) string {
	out := pflag.NewFlagSet("help", pflag.ContinueOnError)
	out.SortFlags = fs.SortFlags
	fs.VisitAll(func(f *pflag.Flag) {
		g := *f
		if strings.HasPrefix(g.DefValue, "-") {
			g.DefValue = zeroDefault(g.Value.Type())
		}
		out.AddFlag(&g)
	})
	return out.FlagUsagesWrapped(helpWidth)
}

// zeroDefault is the default text pflag omits for a flag of type typ.
func zeroDefault(typ string) string {
	if typ == "duration" {
		return "0s"
	}
	return "0"
}

// wrapText wraps every line longer than width at a space, continuing at
// the line's own indentation.
func wrapText(s string, width int) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ind := len(l) - len(strings.TrimLeft(l, " "))
		ls[i] = wrapIndent(l, width, ind)
	}
	return strings.Join(ls, "\n")
}

// wrapIndent breaks line at spaces so no piece is wider than width; the
// pieces after the first start with indent spaces. A word wider than the
// room stays whole.
func wrapIndent(line string, width, indent int) string {
	var b strings.Builder
	prefix := ""
	for utf8.RuneCountInString(prefix+line) > width {
		room := width - utf8.RuneCountInString(prefix)
		cut := lastSpaceBefore(line, room, len(prefix) == 0)
		if cut <= 0 {
			break
		}
		b.WriteString(prefix + strings.TrimRight(line[:cut], " ") + "\n")
		line = strings.TrimLeft(line[cut:], " ")
		prefix = strings.Repeat(" ", indent)
	}
	b.WriteString(prefix + line)
	return b.String()
}

// lastSpaceBefore is the byte index of the last space at or before rune
// room of s, past its leading indentation on the first piece; when a word
// is wider than room, the first space after it; -1 if none.
func lastSpaceBefore(s string, room int, first bool) int {
	start := 0
	if first {
		start = len(s) - len(strings.TrimLeft(s, " "))
	}
	cut, n := -1, 0
	for i, r := range s {
		if r == ' ' && i > start && (n <= room || cut < 0) {
			cut = i
			if n > room {
				break
			}
		}
		n++
	}
	return cut
}
