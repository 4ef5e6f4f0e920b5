package cachedir

import (
	"context"
	"time"

	"github.com/kci-dev/kci/internal/proc"
)

// The tests of the listing and pruning make their cache with git the way
// the kernel stage does; these stand in for the kernel stage's helpers
// they were written with.

var gitEnv = []string{
	"GIT_AUTHOR_NAME=kci", "GIT_AUTHOR_EMAIL=kci@localhost",
	"GIT_COMMITTER_NAME=kci", "GIT_COMMITTER_EMAIL=kci@localhost",
	"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
}

type command struct {
	dir string
	env []string
}

func (c command) run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := proc.Cmd{Name: name, Args: args, Dir: c.dir, Env: c.env}.Run(ctx)
	return string(out), err
}

func (c *Cache) path(elem ...string) string          { return c.Path(elem...) }
func (c *Cache) tryLock(name string) (func(), error) { return c.TryLock(name) }

// prune is PruneImages by the name vmimage's test knew it by.
func prune(pattern string, now time.Time) { PruneImages(pattern, now) }
