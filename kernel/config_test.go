package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/kconfig"
)

func TestParseFragmentRejectsGarbage(t *testing.T) {
	_, err := ParseFragment("x.config", []byte("CONFIG_A=y\nCONFIG_B y\n"))
	if err == nil || !strings.Contains(err.Error(), "x.config:2") {
		t.Fatalf("got %v, want an error citing x.config:2", err)
	}
	f, err := ParseFragment("y.config", []byte("# c\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Option{{"A", "y", "y.config:2"}, {"B", "n", "y.config:3"}, {"C", `"s"`, "y.config:4"}}
	if len(f.Options) != 3 {
		t.Fatalf("options %+v", f.Options)
	}
	for i := range want {
		if f.Options[i] != want[i] {
			t.Errorf("option %d = %+v, want %+v", i, f.Options[i], want[i])
		}
	}
}

func TestMergeLastWins(t *testing.T) {
	base := []byte("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\n")
	f1, _ := ParseFragment("1", []byte("CONFIG_B=y\nCONFIG_A=n\n"))
	f2, _ := ParseFragment("2", []byte("CONFIG_B=m\n"))
	got := ParseValues(mergeInto(base, []Fragment{f1, f2}))
	if got.Get("A") != "n" || got.Get("B") != "m" || got.Get("C") != "m" {
		t.Fatalf("merged %v", got)
	}
	if strings.Count(string(mergeInto(base, []Fragment{f1, f2})), "CONFIG_B") != 1 {
		t.Error("an option appears twice after merging")
	}
}

func TestVerifyListsEveryViolation(t *testing.T) {
	req, _ := ParseFragment("kci.config", []byte("CONFIG_BPF=y\nCONFIG_VETH=y\n# CONFIG_MODULES is not set\n"))
	user, _ := ParseFragment("user.config", []byte("CONFIG_PROVE_LOCKING=y\n"))
	final := Values{"BPF": "y", "MODULES": "y", "PROVE_LOCKING": "y", "LOCKDEP": "y", "KASAN": "y"}
	deps := func(n string) string { return "because " + n }
	vs := Verify(final, []Fragment{req, user}, deps)
	got := map[string]Violation{}
	for _, v := range vs {
		got[v.Option] = v
	}
	if v := got["VETH"]; v.Got != "n" || v.Source != "kci.config:2" || v.Why != "because VETH" {
		t.Errorf("dropped VETH: %+v", v)
	}
	if v := got["MODULES"]; v.Want != "n" || v.Got != "y" {
		t.Errorf("MODULES: %+v", v)
	}
	if v := got["PROVE_LOCKING"]; !strings.Contains(v.Source, "user.config:1") || !strings.Contains(v.Source, "forbidden") {
		t.Errorf("PROVE_LOCKING: %+v", v)
	}
	for _, n := range []string{"LOCKDEP", "KASAN"} {
		if _, ok := got[n]; !ok {
			t.Errorf("forbidden %s not reported", n)
		}
	}
	if _, ok := got["BPF"]; ok {
		t.Error("BPF reported although it has its value")
	}
	err := (&ConfigError{Violations: vs}).Error()
	for _, n := range []string{"CONFIG_VETH", "CONFIG_PROVE_LOCKING", "CONFIG_LOCKDEP", "CONFIG_KASAN", "CONFIG_MODULES"} {
		if !strings.Contains(err, n) {
			t.Errorf("error text lacks %s:\n%s", n, err)
		}
	}
}

func TestKconfigDeps(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "net"), 0o755)
	os.WriteFile(filepath.Join(dir, "net", "Kconfig"), []byte("config FOO\n\tbool \"foo\"\n\tdepends on BAR && BAZ\n\thelp\n\t  x\n\nconfig CHOSEN\n\tbool\n"), 0o644)
	d := kconfigDeps(dir)
	if got := d("FOO"); got != "unmet dependency: depends on BAR && BAZ" {
		t.Errorf("FOO: %q", got)
	}
	if got := d("NOPE"); !strings.Contains(got, "no such Kconfig symbol") {
		t.Errorf("NOPE: %q", got)
	}
	if got := d("CHOSEN"); !strings.Contains(got, "select") {
		t.Errorf("CHOSEN: %q", got)
	}
}

func TestCompareProduction(t *testing.T) {
	here := Values{"HZ": "250", "NUMA": "n", "JUMP_LABEL": "y"}
	prod := Values{"HZ": "250", "NUMA": "y", "JUMP_LABEL": "n"}
	ds := CompareProduction(here, prod)
	m := map[string]Drift{}
	for _, d := range ds {
		m[d.Option] = d
	}
	if _, ok := m["HZ"]; ok {
		t.Error("HZ equal but reported")
	}
	if m["NUMA"].Why == "" {
		t.Errorf("NUMA should be a deliberate drift: %v", m["NUMA"])
	}
	if m["JUMP_LABEL"].Why != "" {
		t.Errorf("JUMP_LABEL drift must be flagged: %v", m["JUMP_LABEL"])
	}
}

func TestBuiltinFragmentsParse(t *testing.T) {
	for _, n := range []string{"config/kci.config", "config/production.config"} {
		data, err := builtinFragments.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFragment(n, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range f.Options {
			for _, bad := range kconfig.Forbidden {
				if o.Name == bad && o.Value != "n" {
					t.Errorf("%s asks for forbidden %s", o.Source, bad)
				}
			}
		}
	}
}
