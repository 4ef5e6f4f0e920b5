package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/kci-dev/kci/internal/cachedir"
)

// cacheShown is how many kinds the cache line names; the rest are summed,
// so the line fits a terminal.
const cacheShown = 3

// CheckCache is the cache's size on disk, its largest kinds by name, and
// a warning for trash a killed run did not finish deleting (space nothing
// uses, freed by kci cache prune).
func CheckCache(ctx context.Context, c *cachedir.Cache) Check {
	ck := Check{Name: "cache", Status: OK}
	items, err := c.Usage(ctx)
	if err != nil {
		ck.Status, ck.Detail = Warn, err.Error()
		return ck
	}
	totals := cachedir.Totals(items)
	sort.SliceStable(totals, func(i, j int) bool { return totals[i].Size > totals[j].Size })
	var all, rest, trash int64
	var parts []string
	for i, t := range totals {
		all += t.Size
		if t.Kind == cachedir.KindTrash {
			trash = t.Size
		}
		if i < cacheShown && t.Size > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", t.Kind, humanize.IBytes(uint64(t.Size))))
		} else {
			rest += t.Size
		}
	}
	if rest > 0 {
		parts = append(parts, "rest "+humanize.IBytes(uint64(rest)))
	}
	ck.Detail = humanize.IBytes(uint64(all)) + " on disk"
	if len(parts) > 0 {
		ck.Detail += ": " + strings.Join(parts, ", ")
	}
	if trash > 0 { // the news, in place of the breakdown: the line must fit
		ck.Status, ck.Fix = Warn, "kci cache prune --kind trash"
		ck.Detail = fmt.Sprintf("%s on disk, %s of it trash a killed run left",
			humanize.IBytes(uint64(all)), humanize.IBytes(uint64(trash)))
	}
	return ck
}
