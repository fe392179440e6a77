package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostgit"
)

// Harbor's registry.json: a JSON list of datasets, each a name, a version, a
// description and its tasks. A task is a local directory (no git_url; its
// path is relative to the registry file) or a directory inside a git
// repository at a commit. docs/harbor.md describes what flightdeck does with
// each key.

// maxRegistryBytes caps the size of a registry file (Harbor's own public
// registry is a few megabytes).
const maxRegistryBytes = 64 << 20

// Registry is a loaded registry.json.
type Registry struct {
	File     string    // absolute path of the registry file
	Datasets []Dataset // in file order
}

// Dataset is one entry of a registry: name@version and its tasks.
type Dataset struct {
	Name        string           `json:"name"`
	Version     string           `json:"version"`
	Description string           `json:"description"`
	Tasks       []RegistryTask   `json:"tasks"`
	Metrics     []RegistryMetric `json:"metrics,omitempty"` // Harbor's aggregation; flightdeck reports its own
	// Dir is the directory local task paths are relative to: the registry
	// file's directory.
	Dir string `json:"-"`
}

// RegistryTask is one task of a dataset.
type RegistryTask struct {
	Name string `json:"name"`
	// GitURL is the repository holding the task; empty for a local task.
	GitURL string `json:"git_url,omitempty"`
	// GitCommit is the commit to fetch: a full commit id (pinned), or a
	// branch, a tag or "HEAD" (resolved on every fetch); empty means HEAD.
	GitCommit string `json:"git_commit_id,omitempty"`
	// Path is the task directory: inside the repository for a git task,
	// else relative to the registry file (or absolute).
	Path string `json:"path"`
}

// RegistryMetric is a Harbor metric entry ({"type": "mean", "kwargs": {}}).
type RegistryMetric struct {
	Type   string         `json:"type"`
	Kwargs map[string]any `json:"kwargs,omitempty"`
}

// ID is name@version.
func (d Dataset) ID() string { return d.Name + "@" + d.Version }

// loadRegistry reads a Harbor registry.json. Every refusal names the file
// and the field: a file that is not a JSON list of datasets, a dataset
// without a name or version, the same name@version twice, a task without a
// name or path, and a git task whose path is absolute or leaves the
// repository. Unknown keys are ignored, as Harbor ignores them.
func loadRegistry(file string) (*Registry, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("load registry %s: %w", file, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("load registry: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRegistryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load registry %s: %w", file, err)
	}
	if len(data) > maxRegistryBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, maxRegistryBytes)
	}
	datasets, err := parseRegistry(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for i := range datasets {
		datasets[i].Dir = filepath.Dir(abs)
	}
	return &Registry{File: abs, Datasets: datasets}, nil
}

// parseRegistry decodes and checks a registry document.
func parseRegistry(data []byte) ([]Dataset, error) {
	var datasets []Dataset
	if err := json.Unmarshal(data, &datasets); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("%s: a JSON %s where %s is expected", te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("not a Harbor registry (a JSON list of datasets): %v", err)
	}
	if datasets == nil {
		return nil, errors.New("not a Harbor registry: want a JSON list of datasets, found null")
	}
	seen := map[string]int{}
	for i, d := range datasets {
		at := fmt.Sprintf("[%d]", i)
		if strings.TrimSpace(d.Name) == "" {
			return nil, fmt.Errorf("%s.name: missing: every dataset has a name", at)
		}
		if strings.ContainsAny(d.Name, "@") {
			return nil, fmt.Errorf("%s.name: %q: a dataset name may not contain @", at, d.Name)
		}
		if strings.TrimSpace(d.Version) == "" {
			return nil, fmt.Errorf("%s.version: missing: dataset %q has no version", at, d.Name)
		}
		if j, dup := seen[d.ID()]; dup {
			return nil, fmt.Errorf("%s: dataset %s is defined twice (also at [%d])", at, d.ID(), j)
		}
		seen[d.ID()] = i
		for k, t := range d.Tasks {
			if err := checkRegistryTask(t); err != nil {
				return nil, fmt.Errorf("%s.tasks[%d]%w", at, k, err)
			}
		}
	}
	return datasets, nil
}

// checkRegistryTask checks one task entry; the error starts with the field.
func checkRegistryTask(t RegistryTask) error {
	if strings.TrimSpace(t.Name) == "" {
		return errors.New(".name: missing: every task has a name")
	}
	if strings.TrimSpace(t.Path) == "" {
		return fmt.Errorf(".path: missing: task %q has no path", t.Name)
	}
	if strings.ContainsRune(t.Path, 0) {
		return fmt.Errorf(".path: task %q: a path may not hold a NUL byte", t.Name)
	}
	if t.GitURL == "" {
		if t.GitCommit != "" {
			return fmt.Errorf(".git_commit_id: task %q has a commit but no git_url", t.Name)
		}
		return nil
	}
	if strings.HasPrefix(t.GitURL, "-") {
		return fmt.Errorf(".git_url: task %q: %q is not a repository URL", t.Name, t.GitURL)
	}
	if strings.HasPrefix(t.GitCommit, "-") {
		return fmt.Errorf(".git_commit_id: task %q: %q is not a commit", t.Name, t.GitCommit)
	}
	p := filepath.ToSlash(t.Path)
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(path.Clean(p), "../") {
		return fmt.Errorf(".path: task %q: %q must be a relative path inside the repository", t.Name, t.Path)
	}
	return nil
}

// Dataset finds a dataset by "name@version", or by "name" alone when the
// registry has one version of it.
func (r *Registry) Dataset(nameAtVersion string) (Dataset, error) {
	name, version, pinned := strings.Cut(nameAtVersion, "@")
	var versions []string
	for _, d := range r.Datasets {
		if d.Name != name {
			continue
		}
		if pinned && d.Version == version {
			return d, nil
		}
		versions = append(versions, d.Version)
	}
	switch {
	case len(versions) == 0:
		return Dataset{}, fmt.Errorf("%s: no dataset named %q (it has %s)", r.File, name, r.names())
	case pinned:
		return Dataset{}, fmt.Errorf("%s: dataset %q has no version %q (it has %s)", r.File, name, version, strings.Join(versions, ", "))
	case len(versions) > 1:
		return Dataset{}, fmt.Errorf("%s: dataset %q has versions %s; name one as %s@VERSION", r.File, name, strings.Join(versions, ", "), name)
	}
	return r.Dataset(name + "@" + versions[0])
}

// names lists the registry's dataset names, for error messages.
func (r *Registry) names() string {
	set := map[string]bool{}
	for _, d := range r.Datasets {
		set[d.Name] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no datasets"
	}
	if len(names) > 20 {
		names = append(names[:20], "...")
	}
	return strings.Join(names, ", ")
}

// gitRunner runs git with args in dir and returns its standard output; the
// error carries git's standard error. Tests wrap it to count fetches.
type gitRunner func(ctx context.Context, dir string, args ...string) ([]byte, error)

// fetchDataset returns the task directories of a dataset, in its order.
// A local task is used where it is (relative to the registry file). Git
// tasks are fetched with the git CLI into cacheDir, once per repository and
// commit: cacheDir/<first 16 hex of sha256(url)>/<commit> holds that
// commit's tree, fetched into a temporary directory and renamed into place,
// so a present directory is complete and is reused without fetching. A
// branch, tag, "HEAD" or empty commit is resolved to a commit with
// git ls-remote first, on every call.
func fetchDataset(ctx context.Context, ds Dataset, cacheDir string) ([]string, error) {
	return fetchDatasetWith(ctx, ds, cacheDir, hostgit.RunPlain)
}

// fetchDatasetWith is fetchDataset with the git it runs.
func fetchDatasetWith(ctx context.Context, ds Dataset, cacheDir string, git gitRunner) ([]string, error) {
	dirs := make([]string, 0, len(ds.Tasks))
	checkouts := map[string]string{} // url + "\x00" + commit → checkout dir
	for _, t := range ds.Tasks {
		if err := checkRegistryTask(t); err != nil {
			return nil, fmt.Errorf("dataset %s: task%w", ds.ID(), err)
		}
		var dir string
		var err error
		if t.GitURL == "" {
			dir, err = localTaskDir(ds.Dir, t)
		} else {
			dir, err = gitTaskDir(ctx, cacheDir, t, checkouts, git)
		}
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", ds.ID(), err)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// localTaskDir is a local task's directory, which must exist.
func localTaskDir(base string, t RegistryTask) (string, error) {
	dir := filepath.FromSlash(t.Path)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("task %s: %s: %w", t.Name, dir, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("task %s: %s is not a directory", t.Name, dir)
	}
	return dir, nil
}

// gitTaskDir fetches (or reuses) the task's repository at its commit and
// returns the task's directory inside it.
func gitTaskDir(ctx context.Context, cacheDir string, t RegistryTask, checkouts map[string]string, git gitRunner) (string, error) {
	if cacheDir == "" {
		return "", fmt.Errorf("task %s: git tasks need a cache directory", t.Name)
	}
	commit, err := resolveCommit(ctx, t, git)
	if err != nil {
		return "", err
	}
	key := t.GitURL + "\x00" + commit
	checkout, ok := checkouts[key]
	if !ok {
		checkout, err = fetchCommit(ctx, cacheDir, t.GitURL, commit, git)
		if err != nil {
			return "", fmt.Errorf("task %s: %w", t.Name, err)
		}
		checkouts[key] = checkout
	}
	return taskInCheckout(checkout, commit, t)
}

// fullCommitRE is a full SHA-1 or SHA-256 commit id.
var fullCommitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// shortCommitRE looks like an abbreviated commit id.
var shortCommitRE = regexp.MustCompile(`^[0-9a-fA-F]{4,39}$`)

// resolveCommit is the task's full commit id: git_commit_id when it is one,
// else the commit its ref names on the remote now.
func resolveCommit(ctx context.Context, t RegistryTask, git gitRunner) (string, error) {
	ref := strings.TrimSpace(t.GitCommit)
	if lower := strings.ToLower(ref); fullCommitRE.MatchString(lower) {
		return lower, nil
	}
	if ref == "" {
		ref = "HEAD"
	}
	out, err := git(ctx, "", "ls-remote", "--", t.GitURL, ref, ref+"^{}") // the second names a tag's commit
	if err != nil {
		return "", fmt.Errorf("task %s: resolve %q in %s: %w", t.Name, ref, t.GitURL, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		sha, name, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || !fullCommitRE.MatchString(sha) {
			continue
		}
		// ls-remote matches ref tails; prefer an exact name, then any
		// branch or tag of that name.
		if name == ref || name == "refs/heads/"+ref || name == "refs/tags/"+ref || name == "refs/tags/"+ref+"^{}" {
			return resolvedTagOrCommit(out, ref, sha), nil
		}
	}
	hint := ""
	if shortCommitRE.MatchString(ref) {
		hint = "; abbreviated commit ids cannot be fetched: write the full 40-character id"
	}
	return "", fmt.Errorf("task %s: git_commit_id %q names no branch, tag or commit in %s%s", t.Name, t.GitCommit, t.GitURL, hint)
}

// resolvedTagOrCommit prefers the peeled commit of an annotated tag.
func resolvedTagOrCommit(lsRemote []byte, ref, sha string) string {
	for _, line := range strings.Split(string(lsRemote), "\n") {
		s, name, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && name == "refs/tags/"+ref+"^{}" && fullCommitRE.MatchString(s) {
			return s
		}
	}
	return sha
}

// fetchCommit makes sure cacheDir/<url hash>/<commit> holds the commit's
// tree and returns it. The fetch goes to a temporary directory beside it,
// renamed into place once complete.
func fetchCommit(ctx context.Context, cacheDir, url, commit string, git gitRunner) (string, error) {
	sum := sha256.Sum256([]byte(url))
	repoDir := filepath.Join(cacheDir, hex.EncodeToString(sum[:])[:16])
	final := filepath.Join(repoDir, commit)
	if info, err := os.Stat(final); err == nil && info.IsDir() {
		return final, nil
	}
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		return "", fmt.Errorf("git cache: %w", err)
	}
	tmp, err := os.MkdirTemp(repoDir, ".fetch-"+commit[:12]+"-")
	if err != nil {
		return "", fmt.Errorf("git cache: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := fetchInto(ctx, tmp, url, commit, git); err != nil {
		return "", fmt.Errorf("fetch %s at %s: %w", url, commit, err)
	}
	if err := os.RemoveAll(filepath.Join(tmp, ".git")); err != nil {
		return "", fmt.Errorf("git cache: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another fetch of the same commit finished first: use it.
		if info, serr := os.Stat(final); serr == nil && info.IsDir() {
			return final, nil
		}
		return "", fmt.Errorf("git cache: %w", err)
	}
	return final, nil
}

// fetchInto checks the commit out in dir: a shallow fetch of the commit
// itself, or, when the server refuses to serve a commit by id, of all its
// branches and tags.
func fetchInto(ctx context.Context, dir, url, commit string, git gitRunner) error {
	steps := [][]string{
		{"init", "-q"},
		{"remote", "add", "origin", url},
	}
	for _, args := range steps {
		if _, err := git(ctx, dir, args...); err != nil {
			return err
		}
	}
	if _, err := git(ctx, dir, "fetch", "-q", "--depth", "1", "--no-tags", "origin", commit); err != nil {
		if _, ferr := git(ctx, dir, "fetch", "-q", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*"); ferr != nil {
			return err
		}
		if _, cerr := git(ctx, dir, "cat-file", "-e", commit+"^{commit}"); cerr != nil {
			return fmt.Errorf("commit %s is not in the repository: %w", commit, err)
		}
	}
	if _, err := git(ctx, dir, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit); err != nil {
		return err
	}
	out, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(out)); got != commit {
		return fmt.Errorf("checked out %s, want %s", got, commit)
	}
	return nil
}

// taskInCheckout is the task's directory inside a checkout, which must be a
// directory that stays inside it.
func taskInCheckout(checkout, commit string, t RegistryTask) (string, error) {
	dir := filepath.Join(checkout, filepath.FromSlash(t.Path))
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("task %s: %s has no %s at commit %s", t.Name, t.GitURL, t.Path, commit)
	}
	if err != nil {
		return "", fmt.Errorf("task %s: %w", t.Name, err)
	}
	root, err := filepath.EvalSymlinks(checkout)
	if err != nil {
		return "", fmt.Errorf("task %s: %w", t.Name, err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("task %s: %s leaves the repository", t.Name, t.Path)
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return "", fmt.Errorf("task %s: %s at commit %s is not a directory", t.Name, t.Path, commit)
	}
	return dir, nil
}
