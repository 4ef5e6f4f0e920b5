package verdict

import (
	"sort"

	"github.com/kci-dev/kci/results"
)

// CellState is one survival matrix cell on one kernel, over all its boots.
type CellState struct {
	Carrier  string `json:"carrier"`
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Observed string `json:"observed"` // the observation, or "mixed" if boots disagreed
	Reason   string `json:"reason,omitempty"`
	Detail   string `json:"detail,omitempty"` // from the first failing boot
	Runs     int    `json:"runs"`
	Passes   int    `json:"passes"`
}

// Pass reports whether the cell passed in every boot.
func (c CellState) Pass() bool { return c.Runs > 0 && c.Passes == c.Runs }

// matrix is the survival matrix of one kernel (tree + role).
type matrix struct {
	Tree  string      `json:"tree"`
	Role  string      `json:"role"`
	Cells []CellState `json:"cells"`
}

// survivalMatrix folds the cells of all boots of one kernel.
func survivalMatrix(run *results.Run, tree, role string) matrix {
	m := matrix{Tree: tree, Role: role}
	idx := map[[2]string]int{}
	boots := append([]results.Boot(nil), run.Boots...)
	sort.SliceStable(boots, func(i, j int) bool { return boots[i].Seq < boots[j].Seq })
	for _, b := range boots {
		if b.Tree != tree || b.Role != role {
			continue
		}
		for _, c := range b.Cells {
			m.add(idx, c)
		}
	}
	return m
}

func (m *matrix) add(idx map[[2]string]int, c results.Cell) {
	k := [2]string{c.Carrier, c.Path}
	i, ok := idx[k]
	if !ok {
		i = len(m.Cells)
		idx[k] = i
		m.Cells = append(m.Cells, CellState{Carrier: c.Carrier, Path: c.Path, Expected: c.Expected, Observed: c.Observed, Reason: c.Reason})
	}
	s := &m.Cells[i]
	s.Runs++
	if c.Pass {
		s.Passes++
	} else if s.Detail == "" {
		s.Detail = c.Detail
	}
	if s.Observed != c.Observed {
		s.Observed = "mixed"
	}
}

// cell returns the state of one cell, if the kernel ran it.
func (m matrix) cell(carrier, path string) (CellState, bool) {
	for _, c := range m.Cells {
		if c.Carrier == carrier && c.Path == path {
			return c, true
		}
	}
	return CellState{}, false
}

// Change kinds between base and patched.
const (
	Regression = "regression" // passes on base, fails on patched
	Fixed      = "fixed"      // fails on base, passes on patched
)

// CellChange is a survival cell whose outcome differs between the kernels.
type CellChange struct {
	Kind    string    `json:"kind"`
	Base    CellState `json:"base"`
	Patched CellState `json:"patched"`
}

// SurvivalRow pairs one cell's base and patched states for display.
type SurvivalRow struct {
	Carrier string     `json:"carrier"`
	Path    string     `json:"path"`
	Base    *CellState `json:"base,omitempty"`
	Patched *CellState `json:"patched,omitempty"`
	Change  string     `json:"change,omitempty"` // regression | fixed
}

// survival lines up both kernels of a tree, in the order cells were first
// seen (base first), and classifies changes.
func survival(run *results.Run, tree string) []SurvivalRow {
	base := survivalMatrix(run, tree, results.RoleBase)
	patched := survivalMatrix(run, tree, results.RolePatched)
	var rows []SurvivalRow
	seen := map[[2]string]bool{}
	add := func(c CellState) {
		k := [2]string{c.Carrier, c.Path}
		if seen[k] {
			return
		}
		seen[k] = true
		row := SurvivalRow{Carrier: c.Carrier, Path: c.Path}
		if b, ok := base.cell(c.Carrier, c.Path); ok {
			row.Base = &b
		}
		if p, ok := patched.cell(c.Carrier, c.Path); ok {
			row.Patched = &p
		}
		if row.Base != nil && row.Patched != nil {
			switch {
			case row.Base.Pass() && !row.Patched.Pass():
				row.Change = Regression
			case !row.Base.Pass() && row.Patched.Pass():
				row.Change = Fixed
			}
		}
		rows = append(rows, row)
	}
	for _, c := range base.Cells {
		add(c)
	}
	for _, c := range patched.Cells {
		add(c)
	}
	return rows
}
