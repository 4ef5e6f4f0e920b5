package render

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// BenchFile is the name of the Go benchmark format file of one kernel,
// inside the run directory.
func BenchFile(tree, role string) string {
	return fmt.Sprintf("bench-%s-%s.txt", tree, role)
}

// BenchFormat writes one kernel's valid samples in the Go benchmark
// format, one line per program that ran and per variant total per
// repetition ("Benchmark<variant>/<prog> <packets> <x> ns/pkt", the
// total as "Benchmark<variant>/total <packets> <x> total-ns/pkt"), so that
// `benchstat base.txt patched.txt` compares them. The configuration lines
// are identical for both kernels of a tree so benchstat pairs them.
func BenchFormat(w io.Writer, run *results.Run, tree, role string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# kci run %s, tree %s, %s kernel", run.ID, tree, role)
	if t := run.Tree(tree); t != nil {
		k := t.Base
		if role == results.RolePatched {
			k = t.Patched
		}
		if id := results.KernelID(k); id != "" {
			b.WriteString(" " + id)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "# compare: benchstat %s %s\n", BenchFile(tree, results.RoleBase), BenchFile(tree, results.RolePatched))
	writeBenchConfig(&b, run, tree)
	writeBenchLines(&b, run, tree, role)
	_, err := io.WriteString(w, b.String())
	return err
}

// BenchStream writes every kernel of the run in one stream, with a "role"
// configuration key telling base from patched:
// `benchstat -col role FILE` compares them.
func BenchStream(w io.Writer, run *results.Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# kci run %s; compare with: benchstat -col role FILE\n", run.ID)
	for _, tree := range run.TreeNames() {
		for _, role := range []string{results.RoleBase, results.RolePatched} {
			writeBenchConfig(&b, run, tree)
			fmt.Fprintf(&b, "role: %s\n", role)
			writeBenchLines(&b, run, tree, role)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeBenchConfig(b *strings.Builder, run *results.Run, tree string) {
	b.WriteString("goos: linux\ngoarch: amd64\n")
	fmt.Fprintf(b, "pkg: kci/%s\n", tree)
	if run.Host.CPUModel != "" {
		fmt.Fprintf(b, "cpu: %s\n", run.Host.CPUModel)
	}
	fmt.Fprintf(b, "tree: %s\n", tree)
	if run.ClockMode(tree) == results.ClockICount {
		fmt.Fprintf(b, "accel: %s\n", results.AccelTCG)
		fmt.Fprintf(b, "clock: %s\n", results.ClockICount)
		fmt.Fprintf(b, "note: %s\n", results.InstructionTimeLabel)
	} else if run.Emulated(tree) {
		fmt.Fprintf(b, "accel: %s\n", results.AccelTCG)
		fmt.Fprintf(b, "note: %s\n", results.EmulatedLabel)
	} else if run.Host.Accel != "" {
		fmt.Fprintf(b, "accel: %s\n", run.Host.Accel)
	}
}

// BenchUnit is the benchmark-format unit of a tree's numbers: ns/pkt, or
// insn-ns/pkt for instruction time (icount), which is not real time and
// must not be compared with it.
func BenchUnit(run *results.Run, tree string) string {
	if run.ClockMode(tree) == results.ClockICount {
		return "insn-ns/pkt"
	}
	return "ns/pkt"
}

// TotalUnitPrefix marks a variant total's unit in the benchmark format
// ("total-ns/pkt"): totals are compared among themselves.
const TotalUnitPrefix = "total-"

func writeBenchLines(b *strings.Builder, run *results.Run, tree, role string) {
	unit := BenchUnit(run, tree)
	boots := append([]results.Boot(nil), run.Boots...)
	sort.SliceStable(boots, func(i, j int) bool { return boots[i].Seq < boots[j].Seq })
	for _, bt := range boots {
		if bt.Tree != tree || bt.Role != role || bt.Error != "" {
			continue // a failed boot is out of the numbers, as in Compare
		}
		for _, v := range bt.Variants {
			if !v.Valid || v.Skipped != "" {
				continue
			}
			costs, ref := results.PerPacket(v.Programs)
			iters := max(ref, 1)
			name := benchName(v.Variant)
			for _, c := range costs {
				if c.NsPerPkt == 0 {
					continue // did not run: no sample (benchstat needs > 0)
				}
				fmt.Fprintf(b, "Benchmark%s/%s %d %.3f %s\n", name, benchName(c.Name), iters, c.NsPerPkt, unit)
			}
			// The total under a unit of its own: benchstat gives it its own
			// table and geomean instead of counting it beside its parts.
			fmt.Fprintf(b, "Benchmark%s/%s %d %.3f %s\n", name, verdict.TotalRow, iters, results.Total(costs), TotalUnitPrefix+unit)
		}
	}
}

// benchName keeps a name one benchmark-format field: no blanks, no '/'.
func benchName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '/':
			return '_'
		}
		return r
	}, s)
}

// benchPaths are the bench files WriteReports leaves in dir for a tree.
func benchPaths(dir, tree string) (base, patched string) {
	return filepath.Join(dir, BenchFile(tree, results.RoleBase)), filepath.Join(dir, BenchFile(tree, results.RolePatched))
}
