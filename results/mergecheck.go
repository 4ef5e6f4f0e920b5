package results

import (
	"fmt"
	"os"
	"strings"
)

// MergeInputError: kci report --merge was given shards that are not
// distinct parts of one job (the same directory twice, the same run
// copied, one shard run twice): merging them would count the same
// repetitions twice and shrink every interval for nothing.
type MergeInputError struct{ Msg string }

func (e *MergeInputError) Error() string { return "results: merge: " + e.Msg }

// checkDistinctShards refuses the same shard twice: one directory named
// twice (also via a symlink or another relative path), two directories
// holding the same run id, or two runs of the same --shard i/N.
func checkDistinctShards(dirs []string, runs []*Run) error {
	type seen struct {
		dir string
		fi  os.FileInfo
	}
	var dirsSeen []seen
	ids := map[string]string{}
	shards := map[string]string{}
	for i, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("results: merge: %w", err)
		}
		for _, s := range dirsSeen {
			if os.SameFile(fi, s.fi) {
				return &MergeInputError{fmt.Sprintf("%s and %s are the same directory: each shard once", s.dir, d)}
			}
		}
		dirsSeen = append(dirsSeen, seen{d, fi})
		r := runs[i]
		if prev, ok := ids[r.ID]; ok {
			return &MergeInputError{fmt.Sprintf("%s and %s hold the same run %s: each shard once", prev, d, r.ID)}
		}
		ids[r.ID] = d
		if sh := shardArg(r.Args); sh != "" {
			if prev, ok := shards[sh]; ok {
				return &MergeInputError{fmt.Sprintf("%s and %s both ran --shard %s: the same repetitions twice (each shard once)", prev, d, sh)}
			}
			shards[sh] = d
		}
	}
	return nil
}

// shardArg is the --shard value of a recorded command line, "" if none.
func shardArg(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--shard="); ok {
			return v
		}
		if a == "--shard" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
