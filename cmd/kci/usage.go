package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/job"
)

// badFlagValue is pflag's message for a value its type cannot parse.
var badFlagValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag: (.*)$`)

// flagError turns pflag's errors into usage errors that name the flag and
// say what it wants, instead of strconv's words ("--reps abc: want a
// whole number", not `strconv.ParseInt: parsing "abc"`).
func flagError(cmd *cobra.Command, err error) error {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return job.Usage(err)
	}
	val, name, why := m[1], m[2], m[3]
	typ := ""
	if f := cmd.Flags().Lookup(name); f != nil {
		typ = f.Value.Type()
	}
	want := map[string]string{
		"int": "a whole number", "uint64": "a whole number >= 0", "float64": "a number",
		"duration": "a duration such as 90s, 2m or 1m30s", "bool": "true or false",
	}[typ]
	if name == "seed" || name == "first-seed" {
		want = "a whole number, 1 or more" // as --seed 0 is told: seeds start at 1
	}
	if want == "" {
		return job.Usagef("--%s %q: %s", name, val, why) // our own Values say it themselves
	}
	return job.Usagef("--%s %q: want %s", name, val, want)
}

// memoryValue is a guest memory size flag in MiB that takes units as
// virtme-ng does: 2G, 2048M, 2048 (MiB), 1.5G, 2GiB.
type memoryValue struct{ mib *int }

func (m memoryValue) String() string {
	if m.mib == nil || *m.mib == 0 {
		return "0"
	}
	return strconv.Itoa(*m.mib) + "M"
}

func (m memoryValue) Type() string { return "size" }

func (m memoryValue) Set(s string) error {
	n, err := parseMiB(s)
	if err != nil {
		return err
	}
	*m.mib = n
	return nil
}

// parseMiB reads a size: a number with an optional K, M, G or T suffix
// (binary units; "iB" or "B" after it is allowed), MiB without one.
func parseMiB(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	scale := 1.0
	units := map[byte]float64{'K': 1.0 / 1024, 'M': 1, 'G': 1024, 'T': 1024 * 1024}
	if n := len(t); n > 0 {
		if u, ok := units[t[n-1]]; ok {
			scale, t = u, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*scale > 1<<30 {
		return 0, fmt.Errorf("want a size such as 2G, 2048M or 2048 (MiB)")
	}
	mib := v * scale
	if mib != float64(int(mib)) {
		return 0, fmt.Errorf("%s is not a whole number of MiB", s)
	}
	return int(mib), nil
}
