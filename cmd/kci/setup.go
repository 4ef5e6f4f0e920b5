package main

import (
	"os"

	"github.com/kci-dev/kci/job"
)

// jobSetup checks what kci test and kci series were given (the patch files
// exist, the trees are in kci.yaml, the VM flags make sense) before any
// work or any run directory, and returns the builder and booter.
func jobSetup(patches, trees []string, vmo *vmFlags) (*job.Builder, *job.VMBooter, error) {
	if err := vmo.validate(); err != nil {
		return nil, nil, err
	}
	for _, a := range patches {
		if _, err := os.Stat(a); err != nil {
			return nil, nil, job.Usagef("patch %s: %v", a, err)
		}
	}
	b, _, err := newBuilder("stock", 0)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range trees {
		if _, err := b.Project.Tree(n); err != nil {
			return nil, nil, job.Usagef("--tree: %v", err)
		}
	}
	booter, err := vmo.booter(b.Cache.Root, b.Project)
	if err != nil {
		return nil, nil, err
	}
	return b, booter, nil
}
