// Package role names the two kernels of a tree in a run. The run record,
// the bench files and the profiles all spell them this way, results/ and
// profile/ alike, so the names are a leaf both can import.
package role

const (
	Base    = "base"    // the tree as it is
	Patched = "patched" // the tree with the patches under test
)
