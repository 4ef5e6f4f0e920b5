package verdict

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moduleRoot is the kci module, from this package's directory.
const moduleRoot = "../.."

// funcName is a declaration's name as "Name" or "(*Recv).Name".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, "*"
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}

// parseModule parses every non-test Go file of the module (testdata
// aside) and calls f with its path relative to the module and its syntax.
func parseModule(t *testing.T, f func(rel string, file *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != moduleRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(moduleRoot, path)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(rel), file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A run is analysed once: verdict.AnalyzeRun is called only where a run
// is finished (kci test's finish, which hands the analysis to its
// reports, its exit code and, through job.Result, to what kci test
// prints and posts) or loaded (kci report, kci post, and kci test's
// fallback for a run the job did not finish), once per run at each; no
// renderer calls it. Before the verdict was a value, one kci test
// --post --fail-on-regression analysed each tree 12 times (7 in the job:
// the exit code's survival loop and --fail-on-regression, and text twice,
// Markdown, JSON and HTML; 2 for the report it printed; 3 for the comment,
// the check and the step summary), and each deterministic tree's
// comparison recomputed every other tree's.
func TestOneAnalysisPerRun(t *testing.T) {
	want := map[string]int{
		"job/teststeps.go: (*testRun).finish": 1, // the finished record: reports, exit code, job.Result
		"cmd/kci/test.go: (*testCmd).show":    1, // only a run the job did not finish (no job.Result.Analysis)
		"cmd/kci/post.go: newPostCmd":         1, // kci post: the loaded run
		"cmd/kci/report.go: drawRuns":         2, // kci report: the merged run, or each loaded run
		"cmd/kci/report.go: runReport":        1, // kci report --min-effect: each run re-decided, a copy
	}
	got := map[string]int{}
	parseModule(t, func(rel string, file *ast.File) {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					if fn.Sel.Name == "AnalyzeRun" {
						got[rel+": "+funcName(fd)]++
					}
				case *ast.Ident:
					if fn.Name == "AnalyzeRun" {
						got[rel+": "+funcName(fd)]++
					}
				}
				return true
			})
		}
	})
	if !maps.Equal(got, want) {
		t.Errorf("verdict.AnalyzeRun is called at\n%v\nwant\n%v", got, want)
	}
}

// The package's only way from a run to a tree's report, comparison,
// conclusion, brief or Where is AnalyzeRun: no exported function of the
// package takes a run and returns one of them, so a renderer or the exit
// code cannot analyse a run of its own. The exported functions that do
// read a run are the analysis, the boots' order, kci bench's table and
// the adaptive seeds' plan (a run still booting).
func TestAnalyzeRunIsTheOnlyAnalysis(t *testing.T) {
	reports := []string{"TreeReport", "TreeAB", "Conclusion", "Brief", "Where", "SurvivalRow", "LoadRow", "VariantAB", "Row", "CellChange"}
	var overRun []string
	parseModule(t, func(rel string, file *ast.File) {
		if d := filepath.Dir(rel); d != "results/verdict" && d != "results/benchtab" {
			return
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() || !takesRun(fd) {
				continue
			}
			overRun = append(overRun, funcName(fd))
			if fd.Type.Results == nil {
				continue
			}
			for _, r := range fd.Type.Results.List {
				ast.Inspect(r.Type, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && slices.Contains(reports, id.Name) {
						t.Errorf("%s: %s returns a %s from a run: only AnalyzeRun may", rel, funcName(fd), id.Name)
					}
					return true
				})
			}
		}
	})
	slices.Sort(overRun)
	if want := []string{"AnalyzeRun", "BuildBench", "PlanLook", "SortedBoots"}; !slices.Equal(overRun, want) {
		t.Errorf("exported functions over a run: %v, want %v", overRun, want)
	}
}

// takesRun reports whether fd has a *results.Run (or ...*results.Run)
// parameter.
func takesRun(fd *ast.FuncDecl) bool {
	for _, p := range fd.Type.Params.List {
		t := p.Type
		if e, ok := t.(*ast.Ellipsis); ok {
			t = e.Elt
		}
		if s, ok := t.(*ast.StarExpr); ok {
			if sel, ok := s.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "results" {
					return true
				}
			}
		}
	}
	return false
}
