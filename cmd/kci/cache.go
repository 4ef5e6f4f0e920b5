package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/rcache"
)

func init() { commands = append(commands, newCacheCmd) }

// resultCacheEnv turns the result cache off for every kci command when
// set to "off" (the integration tests that exist to boot set it).
const resultCacheEnv = "KCI_RESULT_CACHE"

// withResultCache puts the result cache in front of booter unless off
// (--no-result-cache) or $KCI_RESULT_CACHE=off; the cache lives under the
// kci cache root.
func withResultCache(booter boot.Booter, root string, off bool) (boot.Booter, error) {
	switch v := os.Getenv(resultCacheEnv); v {
	case "", "on":
	case "off":
		off = true
	default:
		return nil, fmt.Errorf("$%s=%q: want on or off", resultCacheEnv, v)
	}
	if off {
		return booter, nil
	}
	s, err := rcache.Open(root, os.Stderr)
	if err != nil {
		return nil, err
	}
	return boot.WithResultCache(booter, s, os.Stderr), nil
}

func openResultCache() (*rcache.Store, error) {
	c, err := cachedir.Default()
	if err != nil {
		return nil, err
	}
	return rcache.Open(c.Root, os.Stderr)
}

func newCacheCmd() *cobra.Command {
	var kindNames []string
	cmd := &cobra.Command{
		Use:   "cache [list [--kind K]] | prune [--older-than D] [--kind K] | clear [--kind K]",
		Short: "Show what the cache holds by kind, with sizes, and free it",
		Long: `Show what kci's cache ($KCI_CACHE, else ~/.cache/kci) holds, by kind: source
(imported base repositories), builds (kept build trees), kernels (published
kernels), configs (configs kci config resolved), logs (build logs), images
(u-root and agent initramfs layers), results (the measurements of exact boots,
reused instead of booting again), trash, locks and other; each with its count,
size on disk and last use, and the total. kci cache prune and kci cache clear
free them.`,
		Args: cobra.NoArgs,
		RunE: cacheListRun(&kindNames),
	}
	list := &cobra.Command{
		Use:   "list [--kind K]",
		Short: "List the kinds with counts and sizes, or with --kind the items of those kinds",
		Args:  cobra.NoArgs,
		RunE:  cacheListRun(&kindNames),
	}
	for _, c := range []*cobra.Command{cmd, list} {
		c.Flags().StringSliceVar(&kindNames, "kind", nil, "list the items of these kinds (repeat or comma-separate)")
	}
	cmd.AddCommand(list, newCachePruneCmd(false), newCachePruneCmd(true))
	return cmd
}

// parseAge reads a duration, with d for days ("7d", "1.5d").
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("%q: want e.g. 7d or 12h", s)
		}
		return time.Duration(f * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want e.g. 7d or 12h", s)
	}
	return d, nil
}

func writeCacheList(w io.Writer, dir string, list []rcache.Info) error {
	var total int64
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tKERNEL\tSEED\tVARIANTS\tSTORED\tLAST USED\tSIZE")
	for _, in := range list {
		total += in.Size
		if in.Bad != "" {
			fmt.Fprintf(tw, "%s\tCORRUPT: %s (kci cache prune removes it)\t\t\t\t%s\t%s\n", in.ID, in.Bad, humanize.Time(in.Used), humanize.IBytes(uint64(in.Size)))
			continue
		}
		// Every tree's kernel has the same release: the build key tells them apart.
		build, _, _ := strings.Cut(in.Key.Kernel, " ")
		fmt.Fprintf(tw, "%s\t%s %.12s\t%d\t%s\t%s\t%s\t%s\n", in.ID, in.Key.Release, build, in.Key.Seed, planVariants(in.Key.Plan),
			in.Stored.Local().Format("2006-01-02 15:04"), humanize.Time(in.Used), humanize.IBytes(uint64(in.Size)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d entries, %s in %s\n", len(list), humanize.IBytes(uint64(total)), dir)
	return err
}

// planVariants is the variant list of a key's plan, for the listing.
func planVariants(plan string) string {
	var p struct {
		Variants []string `json:"variants"`
		Survival bool     `json:"survival"`
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil {
		return "?"
	}
	s := strings.Join(p.Variants, ",")
	if p.Survival {
		s = strings.TrimPrefix(s+",survival", ",")
	}
	if s == "" {
		return "-"
	}
	return s
}
