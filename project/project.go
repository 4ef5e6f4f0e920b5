// Package project reads kci.yaml: the trees to test on, config policy
// inputs, the guest's size and the benchmark's traffic.
package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	kci "github.com/kci-dev/kci"
	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/materialize"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/wire"
)

// FileName is the project file looked up in the current directory.
const FileName = "kci.yaml"

// File is kci.yaml.
type File struct {
	Base   kernel.Base `yaml:"base"`
	Config Config      `yaml:"config"`
	Trees  []Tree      `yaml:"trees"`
	VM     VM          `yaml:"vm"`
	Bench  Bench       `yaml:"bench"`
	Reps   int         `yaml:"reps"`

	// Dir is the directory relative paths are resolved against.
	Dir string `yaml:"-"`
	// Path is where the file was read from ("embedded default" if so).
	Path string `yaml:"-"`
	// lines is where each value was (vm.cpus -> 31), for errors.
	lines map[string]int
}

type Config struct {
	Base       string   `yaml:"base"`
	Fragments  []string `yaml:"fragments"`
	Production string   `yaml:"production"`
}

type Tree struct {
	Name      string   `yaml:"name"`
	Series    []string `yaml:"series"`
	Fragments []string `yaml:"fragments"`
}

type VM struct {
	CPUs      int    `yaml:"cpus"`
	MemoryMiB int    `yaml:"memory_mib"`
	Accel     string `yaml:"accel"`
	Pin       string `yaml:"pin"`
	// Clock under TCG: icount (default, deterministic) or host.
	Clock string `yaml:"clock"`
}

type Bench struct {
	Variants    []string      `yaml:"variants"`
	Pairs       int           `yaml:"pairs"`
	PayloadSize int           `yaml:"payload_size"`
	RateMbit    float64       `yaml:"rate_mbit"`
	ServerLead  time.Duration `yaml:"server_lead"`
	Warmup      time.Duration `yaml:"warmup"`
	Window      time.Duration `yaml:"window"`
	// Under TCG: shorter lead/warm-up and window (numbers are relative only).
	EmulatedLead time.Duration `yaml:"emulated_lead"`
	// EmulatedWarmup overrides emulated_lead for the warm-up alone: the
	// warm-up's traffic costs boot time, the servers' lead barely any.
	EmulatedWarmup time.Duration `yaml:"emulated_warmup"`
	EmulatedWindow time.Duration `yaml:"emulated_window"`
	// An emulated guest handles a few thousand packets a second, not the
	// user's 146k: per-pair rate under TCG.
	EmulatedRateMbit float64 `yaml:"emulated_rate_mbit"`
}

// Parse reads a project file. Every mistake is an error naming the file,
// the line and the key (decode.go, check.go): unknown keys, values of the
// wrong type, values out of range, unknown variants.
func Parse(name string, data []byte) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(name, err)
	}
	c := &checker{file: name, lines: map[string]int{}}
	if err := c.walk(&doc, reflect.TypeFor[File](), ""); err != nil {
		return nil, err
	}
	var f File
	if len(doc.Content) > 0 {
		if err := doc.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	f.Path, f.lines = name, c.lines
	if err := f.check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Load reads ./kci.yaml if there is one, else the embedded default, whose
// series are materialised under cacheDir.
func Load(cacheDir string) (*File, error) {
	if data, err := os.ReadFile(FileName); err == nil {
		f, err := Parse(FileName, data)
		if err != nil {
			return nil, err
		}
		f.Dir, _ = os.Getwd()
		return f, f.checkPaths()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return Embedded(cacheDir)
}

// Embedded is the default project shipped inside the kci binary.
func Embedded(cacheDir string) (*File, error) {
	data, err := fs.ReadFile(kci.Default, FileName)
	if err != nil {
		return nil, err
	}
	f, err := Parse("embedded default kci.yaml", data)
	if err != nil {
		return nil, err
	}
	dir, err := materialize.Dir(kci.Default, cacheDir, cachedir.Embedded)
	if err != nil {
		return nil, err
	}
	f.Dir = dir
	return f, f.checkPaths()
}

// Abs resolves a path of the project file.
func (f *File) Abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Dir, p)
}

// Tree finds a tree by name.
func (f *File) Tree(name string) (*Tree, error) {
	for i := range f.Trees {
		if f.Trees[i].Name == name {
			return &f.Trees[i], nil
		}
	}
	var names []string
	for _, t := range f.Trees {
		names = append(names, t.Name)
	}
	return nil, fmt.Errorf("no tree %q in %s (trees: %v)", name, f.Path, names)
}

// BenchParams is the suite's traffic for the given accelerator: the
// user's window under KVM, the emulated window under TCG (emulated numbers
// are relative only, so a long window buys little).
func (f *File) BenchParams(accel string) wire.BenchParams {
	b := wire.DefaultBench()
	if f.Bench.Pairs > 0 {
		b.Pairs = f.Bench.Pairs
	}
	if f.Bench.PayloadSize > 0 {
		b.PayloadSize = f.Bench.PayloadSize
	}
	if f.Bench.RateMbit > 0 {
		b.RateMbit = f.Bench.RateMbit
	}
	if f.Bench.ServerLead > 0 {
		b.ServerLead = f.Bench.ServerLead
	}
	if f.Bench.Warmup > 0 {
		b.Warmup = f.Bench.Warmup
	}
	if f.Bench.Window > 0 {
		b.Window = f.Bench.Window
	}
	if accel == "tcg" {
		if f.Bench.EmulatedWindow > 0 {
			b.Window = f.Bench.EmulatedWindow
		}
		if f.Bench.EmulatedRateMbit > 0 {
			b.RateMbit = f.Bench.EmulatedRateMbit
		}
		if f.Bench.EmulatedLead > 0 {
			b.ServerLead, b.Warmup = f.Bench.EmulatedLead, f.Bench.EmulatedLead
		}
		if f.Bench.EmulatedWarmup > 0 {
			b.Warmup = f.Bench.EmulatedWarmup
		}
	}
	return b
}
