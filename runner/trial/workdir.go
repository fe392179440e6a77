package trial

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Limits on what seeding copies out of an image's working directory. The
// task image is trusted: its links (a venv's absolute ones) are kept as
// they are; nothing on the host is ever written or read through them.
var seedLimits = sandbox.CopyLimits{MaxBytes: 2 << 30, MaxEntries: 500000, Symlinks: true}

// WorkDir is a trial's work dir: a host directory seeded with the content of
// the image's working directory and bind-mounted at the same path in the
// agent's container. It is a git repository with a base commit the agent can
// see, and it has a shadow repository the agent never sees, from which the
// runner computes the change (an agent can configure its own repository to
// run programs; the shadow's configuration is the runner's).
type WorkDir struct {
	Host       string // the host directory (bind-mounted)
	Container  string // its path in the containers
	Base       string // the base commit in the work dir's own repository
	shadow     string // the shadow repository's git dir
	shadowBase string // the base commit in the shadow repository
	scratch    string // host dir for the shadow and temporary indexes
	// index, when set, is the shadow's index file for this work dir, so
	// that trials can share one shadow repository (Harbor's model).
	index string
}

// containerWorkDir is the path the agent works in: [environment].workdir,
// else the image's WORKDIR, else "/".
func containerWorkDir(configured string, info sandbox.ImageInfo) string {
	wd := configured
	if wd == "" {
		wd = info.Workdir
	}
	if wd == "" {
		return "/"
	}
	return path.Clean("/" + wd)
}

// seedBase is a seeded tree made ready once per run: the tree with its
// base commit, and a shadow repository that records it. Every trial's work
// dir is a copy of both, so no trial makes the commits again; the commits
// are the same bytes for every trial (fixed identity and dates) anyway.
type seedBase struct {
	tree, shadow     string
	base, shadowBase string
}

// prepareSeed makes the base commits in the seeded tree and records it in a
// shadow repository under scratch (an empty host dir of the runner's).
func prepareSeed(ctx context.Context, tree, scratch string, ownRepo bool) (*seedBase, error) {
	w := &WorkDir{Host: tree, scratch: scratch, shadow: filepath.Join(scratch, "shadow.git")}
	if ownRepo {
		if err := w.baseCommit(ctx); err != nil {
			return nil, err
		}
	} else if err := w.imageHead(ctx); err != nil {
		return nil, err
	}
	if err := w.shadowCommit(ctx); err != nil {
		return nil, err
	}
	return &seedBase{tree: tree, shadow: w.shadow, base: w.Base, shadowBase: w.shadowBase}, nil
}

// prepareWorkDir fills hostDir with a copy of the prepared seed's tree (its
// repository included) and scratch with a copy of its shadow repository.
// Both dirs must exist and be empty. The copies' files have new inodes and
// times, so the first git command that looks at the work tree hashes its
// files once: the copied index never vouches for a file it has not seen.
func prepareWorkDir(seed *seedBase, dir, hostDir, scratch string) (*WorkDir, error) {
	w := &WorkDir{Host: hostDir, Container: dir, scratch: scratch, shadow: filepath.Join(scratch, "shadow.git"),
		Base: seed.base, shadowBase: seed.shadowBase}
	if err := files.CopyTree(seed.tree, hostDir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(w.shadow, 0o755); err != nil {
		return nil, fmt.Errorf("shadow repository: %w", err)
	}
	if err := files.CopyTree(seed.shadow, w.shadow); err != nil {
		return nil, fmt.Errorf("shadow repository: %w", err)
	}
	return w, nil
}

// baseCommit makes the work dir a git repository with a base commit, unless
// it is one already with a clean tree; a dirty one gets a commit on top.
func (w *WorkDir) baseCommit(ctx context.Context) error {
	g := hostgit.Cmd{Dir: w.Host}
	if _, err := os.Stat(filepath.Join(w.Host, ".git")); err != nil {
		if _, err := g.Run(ctx, "init", "-q"); err != nil {
			return fmt.Errorf("make the work dir a repository: %w", err)
		}
		// An identity for the agent's own commits, which it may change.
		for k, v := range map[string]string{"user.name": hostgit.AgentName, "user.email": hostgit.AgentEmail} {
			if _, err := g.Run(ctx, "config", "--local", k, v); err != nil {
				return fmt.Errorf("configure the work dir's repository: %w", err)
			}
		}
	} else if err := hostgit.RepoSafe(w.Host); err != nil {
		return fmt.Errorf("the image's work dir is a repository host git will not use: %w", err)
	} else if head, err := g.Run(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err == nil {
		st, err := g.Run(ctx, "status", "--porcelain", "--untracked-files=all")
		if err == nil && len(strings.TrimSpace(string(st))) == 0 {
			w.Base = strings.TrimSpace(string(head))
			return nil
		}
	}
	if _, err := g.Run(ctx, "add", "-A"); err != nil {
		return fmt.Errorf("base commit: %w", err)
	}
	if _, err := g.Run(ctx, "commit", "-q", "--allow-empty", "--no-verify", "-m", "flightdeck: base"); err != nil {
		return fmt.Errorf("base commit: %w", err)
	}
	head, err := g.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("base commit: %w", err)
	}
	w.Base = strings.TrimSpace(string(head))
	return nil
}

// imageHead records, as the base of the agent's own commits, the commit the
// image's work dir is at when it is a repository already. Nothing in the
// tree is written.
func (w *WorkDir) imageHead(ctx context.Context) error {
	if _, err := os.Lstat(filepath.Join(w.Host, ".git")); err != nil {
		return nil
	}
	if err := hostgit.RepoSafe(w.Host); err != nil {
		return fmt.Errorf("the image's work dir is a repository host git will not use: %w", err)
	}
	if head, err := (hostgit.Cmd{Dir: w.Host}).Run(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err == nil {
		w.Base = strings.TrimSpace(string(head))
	}
	return nil
}

// shadowCommit records the seeded tree in the shadow repository.
func (w *WorkDir) shadowCommit(ctx context.Context) error {
	if _, err := (hostgit.Cmd{Dir: w.scratch}).Run(ctx, "init", "-q", "--bare", w.shadow); err != nil {
		return fmt.Errorf("shadow repository: %w", err)
	}
	g := w.shadowGit("")
	if _, err := g.Run(ctx, "add", "-A"); err != nil {
		return fmt.Errorf("shadow base: %w", err)
	}
	if _, err := g.Run(ctx, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base"); err != nil {
		return fmt.Errorf("shadow base: %w", err)
	}
	head, err := g.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("shadow base: %w", err)
	}
	w.shadowBase = strings.TrimSpace(string(head))
	return nil
}

// shadowGit runs git on the work tree with the shadow repository; index,
// when set, is a temporary index file.
func (w *WorkDir) shadowGit(index string) hostgit.Cmd {
	return hostgit.Cmd{Dir: w.Host, GitDir: w.shadow, Index: index,
		ExtraEnv: []string{"GIT_WORK_TREE=" + w.Host, "GIT_DIR=" + w.shadow, "GIT_CONFIG_PARAMETERS='core.bare=false'"}}
}
