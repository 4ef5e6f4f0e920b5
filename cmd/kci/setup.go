package main

import (
	"context"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// jobSetup checks what kci test and kci series were given (the patch files
// exist, the trees are in kci.yaml, the VM flags make sense) before any
// work or any run directory, and returns the builder and booter.
func jobSetup(patches, trees []string, vmo *vmFlags) (*job.Builder, *boot.VMBooter, error) {
	if err := vmo.validate(); err != nil {
		return nil, nil, err
	}
	for _, a := range patches {
		if err := statInput("patch", a); err != nil {
			return nil, nil, err
		}
	}
	b, err := baseBuilder()
	if err != nil {
		return nil, nil, err
	}
	if _, err := job.PickTrees(b.Project, trees); err != nil {
		return nil, nil, err
	}
	booter, err := vmo.booter(b.Cache.Root, b.Project)
	if err != nil {
		return nil, nil, err
	}
	return b, booter, nil
}

// checkApplies refuses, before any build, patches that do not apply to
// tree t's source (the base plus its series): kci build and kci run
// --patch check as kci test does.
func checkApplies(ctx context.Context, b *job.Builder, t *project.Tree, ps []kernel.Patch) error {
	ae, err := b.Applies(ctx, t, ps)
	if err == nil && ae != nil {
		err = ae
	}
	return job.Classify("patch", err)
}
