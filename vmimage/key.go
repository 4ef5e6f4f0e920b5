package vmimage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	kci "github.com/kci-dev/kci"
	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/keyhash"
	"github.com/kci-dev/kci/internal/materialize"
)

// toolEnv is what the cache keys depend on besides sources.
type toolEnv struct {
	GoVersion string `json:"GOVERSION"`
	GOOS      string `json:"GOOS"`
	GOARCH    string `json:"GOARCH"`
	URoot     string `json:"-"` // u-root module version in the kci module
}

func goEnv(ctx context.Context, src string) (toolEnv, error) {
	var e toolEnv
	out, err := goCmd(ctx, src, nil, "env", "-json", "GOVERSION", "GOOS", "GOARCH")
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		return e, fmt.Errorf("vmimage: go env: %w", err)
	}
	v, err := goCmd(ctx, src, nil, "list", "-m", "-f", "{{.Version}}", "github.com/u-root/u-root")
	if err != nil {
		return e, err
	}
	e.URoot = strings.TrimSpace(v)
	return e, nil
}

// urootKey identifies the u-root layer. The command order does not matter.
func urootKey(e toolEnv, cmds []string) string {
	c := slices.Clone(cmds)
	slices.Sort(c)
	return hashStrings("uroot/v1", e.URoot, e.GoVersion, e.GOOS, e.GOARCH, strings.Join(c, ","))
}

// listedPkg is the part of `go list -json` output the agent key needs.
type listedPkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	EmbedFiles []string
	Module     *struct {
		Path    string
		Version string
		Main    bool
		Replace *struct {
			Path    string
			Version string
		}
	}
}

// agentKey hashes everything the agent binary is built from: the Go
// toolchain, and per dependency package either its module version or, for
// the kci module itself and directory replacements, its files' contents.
func agentKey(ctx context.Context, e toolEnv, src string) (string, error) {
	out, err := goCmd(ctx, src, nil, "list", "-deps",
		"-json=ImportPath,Dir,GoFiles,EmbedFiles,Module", AgentPackage)
	if err != nil {
		return "", err
	}
	pkgs, err := decodeListed(strings.NewReader(out))
	if err != nil {
		return "", fmt.Errorf("vmimage: go list %s: %w", AgentPackage, err)
	}
	h := sha256.New()
	fmt.Fprintln(h, "agent/v1", e.GoVersion, e.GOOS, e.GOARCH, buildFlags)
	if err := hashPackages(h, pkgs); err != nil {
		return "", fmt.Errorf("vmimage: agent sources: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func decodeListed(r io.Reader) ([]listedPkg, error) {
	var pkgs []listedPkg
	dec := json.NewDecoder(r)
	for {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// hashPackages writes a stable digest of pkgs to h. Standard library
// packages are covered by the Go version; module packages by their version
// unless their sources are local.
func hashPackages(h io.Writer, pkgs []listedPkg) error {
	for _, p := range pkgs {
		m := p.Module
		switch {
		case m == nil:
			continue
		case !m.Main && (m.Replace == nil || m.Replace.Version != ""):
			ver := m.Version
			if m.Replace != nil {
				ver = m.Replace.Path + "@" + m.Replace.Version
			}
			fmt.Fprintf(h, "pkg %s %s@%s\n", p.ImportPath, m.Path, ver)
			continue
		}
		fmt.Fprintf(h, "pkg %s local\n", p.ImportPath)
		files := append(slices.Clone(p.GoFiles), p.EmbedFiles...)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(h, "file %s %x\n", f, sum)
		}
	}
	return nil
}

// hashStrings is the one key hash of kci's caches, shared with kernel/.
func hashStrings(parts ...string) string { return keyhash.Strings(parts...) }

const (
	kciModulePath = "github.com/kci-dev/kci"
	kciModule     = "module " + kciModulePath
)

// findSource locates the kci module: $KCI_SRC; else the nearest directory
// above the working directory whose go.mod declares it; else, for a kci
// installed with go install, its version's sources in the module cache.
func findSource(cacheDir string) (string, error) {
	if d := os.Getenv("KCI_SRC"); d != "" {
		if !isKCIModule(filepath.Join(d, "go.mod")) {
			return "", fmt.Errorf("vmimage: KCI_SRC=%s is not the kci module (no go.mod naming %s)", d, kciModulePath)
		}
		return d, nil
	}
	// The sources this binary was built from: right wherever kci is run
	// from, installed or not, and never out of step with the host side.
	d, err := materialize.Dir(kci.AgentSource, cacheDir, cachedir.AgentSrc)
	if err != nil {
		return "", fmt.Errorf("vmimage: agent sources: %w", err)
	}
	return d, nil
}

func isKCIModule(gomod string) bool {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if l := strings.TrimSpace(string(l)); strings.HasPrefix(l, "module ") {
			return l == kciModule
		}
	}
	return false
}
