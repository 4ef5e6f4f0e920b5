package kernel

// Artifacts is a built kernel as published in the cache. Every path is
// absolute and read-only once published.
type Artifacts struct {
	Key     string   `json:"key"`               // cache key: hash(base id, patches, final config)
	Dir     string   `json:"dir"`               // the published cache directory
	BzImage string   `json:"bzimage"`           // arch/x86/boot/bzImage
	Vmlinux string   `json:"vmlinux"`           // with BTF, for symbolisation and BTF checks
	Config  string   `json:"config"`            // the final .config
	Log     string   `json:"log"`               // build log
	Release string   `json:"release"`           // kernel release string (uname -r)
	BaseID  string   `json:"base_id"`           // identity of the base source
	Patches []string `json:"patches,omitempty"` // subjects of the applied series, in order
}
