package main

import (
	"fmt"
	"io"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/job"
)

// defaultPruneAge is kci cache prune's --older-than.
const defaultPruneAge = "30d"

// parseKinds reads --kind: names, repeated or comma-separated; none is
// every kind.
func parseKinds(names []string) ([]cachedir.Kind, error) {
	var kinds []cachedir.Kind
	for _, n := range names {
		k, err := cachedir.ParseKind(strings.TrimSpace(n))
		if err != nil {
			return nil, job.Usagef("--kind %v", err)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// cacheListRun is kci cache [list]: the kinds with their counts and
// sizes, or with --kind the items of those kinds.
func cacheListRun(kindNames *[]string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		kinds, err := parseKinds(*kindNames)
		if err != nil {
			return err
		}
		c, err := cachedir.Default()
		if err != nil {
			return err
		}
		items, err := c.Usage(cmd.Context())
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if len(kinds) == 0 {
			return writeKindTotals(w, c.Root, items)
		}
		for _, k := range kinds {
			if err := writeKindItems(w, k, items); err != nil {
				return err
			}
		}
		return nil
	}
}

// writeKindTotals is the listing by kind, every kind a row, and the total.
func writeKindTotals(w io.Writer, root string, items []cachedir.Item) error {
	const row = "%-8s %6s %10s  %s\n"
	fmt.Fprintf(w, row, "KIND", "ITEMS", "SIZE", "LAST USED")
	var n int
	var size int64
	for _, t := range cachedir.Totals(items) {
		n, size = n+t.Count, size+t.Size
		fmt.Fprintf(w, row, t.Kind, fmt.Sprint(t.Count), humanize.IBytes(uint64(t.Size)), ago(t.Used))
	}
	fmt.Fprintf(w, row, "total", fmt.Sprint(n), humanize.IBytes(uint64(size)), "in "+root)
	_, err := fmt.Fprintf(w, "kci cache list --kind K names the items; "+
		"kci cache prune frees what was not used for %s\n", defaultPruneAge)
	return err
}

// writeKindItems lists the items of kind k: the result cache's entries
// with what they measured, any other kind's with size, use and needs.
func writeKindItems(w io.Writer, k cachedir.Kind, items []cachedir.Item) error {
	if k == cachedir.KindResults {
		s, err := openResultCache()
		if err != nil {
			return err
		}
		list, err := s.List()
		if err != nil {
			return err
		}
		return writeCacheList(w, s.Dir, list)
	}
	cachedir.SortItems(items)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tSIZE\tLAST USED\tNEEDS")
	var n int
	var size int64
	for _, it := range items {
		if it.Kind != k {
			continue
		}
		n, size = n+1, size+it.Size
		needs := "-"
		if len(it.Needs) > 0 {
			// A tree's own kernel is "kernel": its name repeats the tree's.
			needs = strings.ReplaceAll(strings.Join(it.Needs, ", "), "kernels/"+path.Base(it.Name), "kernel")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Name, humanize.IBytes(uint64(it.Size)), ago(it.Used), needs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s: %s, %s\n", k, plural(n, "item"), humanize.IBytes(uint64(size)))
	return err
}

// plural is n and word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// ago is t as "3 hours ago", "-" for never.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanize.Time(t)
}

// newCachePruneCmd is kci cache prune (age set) and kci cache clear.
func newCachePruneCmd(clear bool) *cobra.Command {
	var olderThan string
	var kindNames []string
	cmd := &cobra.Command{
		Use: "prune [--older-than D] [--kind K]",
		Short: "Remove what was unused for D (default " + defaultPruneAge + ") and the trash; " +
			"not what kci holds",
		Long: `Remove the items of the cache not used for D (a build, publish or reuse
touches them), of every kind or of --kind K (source, builds, kernels, configs,
logs, images, results, trash, locks, other; other only when named). The trash
goes whatever its age. A source or kernel takes the build trees that need it
along, unless one of those was used since D: then it stays and prune says why.
A removed build tree's worktree entry is pruned from its source repository.
Items a running kci holds a lock on stay.`,
		Args: cobra.NoArgs,
	}
	if clear {
		cmd.Use, cmd.Short = "clear [--kind K]", "Remove all (or all of --kind K) no running kci holds: "+
			"next runs rebuild it"
		cmd.Long = ""
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		kinds, err := parseKinds(kindNames)
		if err != nil {
			return err
		}
		o := cachedir.PruneOptions{Kinds: kinds}
		if !clear {
			d, err := parseAge(olderThan)
			if err != nil {
				return job.Usagef("--older-than %v", err)
			}
			o.Before = time.Now().Add(-d)
		}
		c, err := cachedir.Default()
		if err != nil {
			return err
		}
		r, err := c.Prune(cmd.Context(), o)
		if r != nil {
			writePruneReport(cmd.OutOrStdout(), c.Root, r)
		}
		return err
	}
	f := cmd.Flags()
	f.StringSliceVar(&kindNames, "kind", nil, "only these kinds (repeat or comma-separate)")
	if !clear {
		f.StringVar(&olderThan, "older-than", defaultPruneAge, "time since last use, e.g. 12h, 7d")
	}
	return cmd
}

// writePruneReport says what went, each item with its size, what stayed
// and why, and the total freed.
func writePruneReport(w io.Writer, root string, r *cachedir.PruneReport) {
	for _, it := range r.Removed {
		fmt.Fprintf(w, "removed %s (%s)\n", it.Name, humanize.IBytes(uint64(it.Size)))
	}
	for _, k := range r.Kept {
		fmt.Fprintf(w, "kept %s (%s): %s\n", k.Item.Name, humanize.IBytes(uint64(k.Item.Size)), k.Why)
	}
	fmt.Fprintf(w, "removed %s, %s freed in %s\n", plural(len(r.Removed), "item"), humanize.IBytes(uint64(r.Freed())), root)
}
