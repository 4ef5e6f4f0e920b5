package tcgplugin

import (
	"fmt"
	"strconv"
)

// vcpuCount reads line 2, "vcpus N quantum K".
func (p *parser) vcpuCount(f []string) error {
	if p.line != 2 {
		return fmt.Errorf("vcpus line must be line 2")
	}
	if len(f) != 4 || f[2] != "quantum" {
		return fmt.Errorf("want vcpus N quantum K")
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 1 {
		return fmt.Errorf("vcpus %q: want a count of 1 or more", f[1])
	}
	q, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil {
		return fmt.Errorf("quantum %q: %w", f[3], err)
	}
	if q > 0 && n == 1 {
		return fmt.Errorf("quantum %d with one vCPU", q)
	}
	p.c.VCPUs, p.c.Quantum = n, q
	return nil
}

// vcpu reads "vcpu <i> insns N mem N cycles N", a window's share of
// vCPU i, in index order right after the window line.
func (p *parser) vcpu(f []string) error {
	if p.vcpus == 0 {
		return fmt.Errorf("vcpu line outside a window's block")
	}
	if len(f) != 8 || f[2] != "insns" || f[4] != "mem" || f[6] != "cycles" {
		return fmt.Errorf("want vcpu <i> insns N mem N cycles N")
	}
	i, err := strconv.Atoi(f[1])
	if err != nil || i != len(p.w.PerVCPU) {
		return fmt.Errorf("vcpu %q out of order: want %d", f[1], len(p.w.PerVCPU))
	}
	n, err := uints([]string{f[3], f[5], f[7]}, 10)
	if err != nil {
		return err
	}
	if !p.c.Cache && n[2] != 0 {
		return fmt.Errorf("cycles %d without the cache model", n[2])
	}
	p.w.PerVCPU = append(p.w.PerVCPU, VCPU{Insns: n[0], Mem: n[1], Cycles: n[2]})
	p.vcpus--
	if p.vcpus > 0 {
		return nil
	}
	var v VCPU
	for _, c := range p.w.PerVCPU {
		v.Insns, v.Mem, v.Cycles = v.Insns+c.Insns, v.Mem+c.Mem, v.Cycles+c.Cycles
	}
	if v.Insns != p.w.Insns || v.Mem != p.w.Mem || v.Cycles != p.w.Cycles {
		return fmt.Errorf("window %d: vcpu lines sum to insns %d mem %d cycles %d, window line says %d %d %d",
			p.w.Index, v.Insns, v.Mem, v.Cycles, p.w.Insns, p.w.Mem, p.w.Cycles)
	}
	return p.check()
}

// turns reads the run's closing
// "turns N coherence xfers N upgrades N invalidations N locked N".
func (p *parser) turns(f []string) error {
	if p.c.VCPUs < 2 && !p.c.Coherent {
		return fmt.Errorf("turns line with one vCPU and no coherent model")
	}
	if p.c.Coherence != nil {
		return fmt.Errorf("a second turns line")
	}
	if len(f) != 11 || f[2] != "coherence" || f[3] != "xfers" || f[5] != "upgrades" || f[7] != "invalidations" || f[9] != "locked" {
		return fmt.Errorf("want turns N coherence xfers N upgrades N invalidations N locked N")
	}
	n, err := uints([]string{f[1], f[4], f[6], f[8], f[10]}, 10)
	if err != nil {
		return err
	}
	p.c.Coherence = &Coherence{Turns: n[0], Transfers: n[1], Upgrades: n[2], Invalidations: n[3], Locked: n[4]}
	return nil
}
