package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/internal/testenv"
)

func writeRegistryFile(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "registry.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestRegistryLoad(t *testing.T) {
	dir := t.TempDir()
	p := writeRegistryFile(t, dir, `[
	  {"name": "local-set", "version": "1.0", "description": "two local tasks", "unknown": true,
	   "tasks": [{"name": "a", "path": "tasks/a"}, {"name": "b", "path": "tasks/b", "extra": 1}],
	   "metrics": [{"type": "mean"}]},
	  {"name": "remote-set", "version": "2.0", "description": "",
	   "tasks": [{"name": "c", "git_url": "https://example.com/r.git", "git_commit_id": "0123456789abcdef0123456789abcdef01234567", "path": "tasks/c"}]},
	  {"name": "local-set", "version": "head", "description": "", "tasks": []}
	]`)
	r, err := loadRegistry(p)
	require.NoError(t, err)
	assert.Equal(t, p, r.File)
	require.Len(t, r.Datasets, 3)
	ds := r.Datasets[0]
	assert.Equal(t, "local-set@1.0", ds.ID())
	assert.Equal(t, dir, ds.Dir)
	assert.Equal(t, []RegistryTask{{Name: "a", Path: "tasks/a"}, {Name: "b", Path: "tasks/b"}}, ds.Tasks)
	assert.Equal(t, []RegistryMetric{{Type: "mean"}}, ds.Metrics)
	assert.Equal(t, "0123456789abcdef0123456789abcdef01234567", r.Datasets[1].Tasks[0].GitCommit)
}

func TestRegistryLoadRefusals(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"not json", `{`, []string{"not a Harbor registry"}},
		{"an object, not a list", `{"datasets": []}`, []string{"not a Harbor registry"}},
		{"null", `null`, []string{"found null"}},
		{"no name", `[{"version": "1", "tasks": []}]`, []string{"[0].name", "missing"}},
		{"name with @", `[{"name": "a@b", "version": "1", "tasks": []}]`, []string{"[0].name", "may not contain @"}},
		{"no version", `[{"name": "d", "tasks": []}]`, []string{"[0].version", `"d" has no version`}},
		{"version of the wrong type", `[{"name": "d", "version": 1, "tasks": []}]`, []string{"version", "a JSON number where string is expected"}},
		{"defined twice", `[{"name": "d", "version": "1"}, {"name": "d", "version": "1"}]`, []string{"[1]", "d@1 is defined twice", "[0]"}},
		{"task without name", `[{"name": "d", "version": "1", "tasks": [{"path": "x"}]}]`, []string{"[0].tasks[0].name", "missing"}},
		{"task without path", `[{"name": "d", "version": "1", "tasks": [{"name": "x"}]}]`, []string{"[0].tasks[0].path", `task "x" has no path`}},
		{"commit without url", `[{"name": "d", "version": "1", "tasks": [{"name": "x", "path": "x", "git_commit_id": "abc"}]}]`, []string{".git_commit_id", "no git_url"}},
		{"git path absolute", `[{"name": "d", "version": "1", "tasks": [{"name": "x", "git_url": "u", "path": "/etc"}]}]`, []string{"[0].tasks[0].path", "inside the repository"}},
		{"git path leaves the repo", `[{"name": "d", "version": "1", "tasks": [{"name": "x", "git_url": "u", "path": "a/../../b"}]}]`, []string{".path", "inside the repository"}},
		{"url like an option", `[{"name": "d", "version": "1", "tasks": [{"name": "x", "git_url": "--upload-pack=sh", "path": "a"}]}]`, []string{".git_url", "not a repository URL"}},
		{"commit like an option", `[{"name": "d", "version": "1", "tasks": [{"name": "x", "git_url": "u", "git_commit_id": "-x", "path": "a"}]}]`, []string{".git_commit_id", "not a commit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeRegistryFile(t, t.TempDir(), tc.body)
			_, err := loadRegistry(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p, "the error names the file")
			for _, s := range tc.want {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestRegistryLoadMissingFile(t *testing.T) {
	_, err := loadRegistry(filepath.Join(t.TempDir(), "nope.json"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope.json")
}

func TestRegistryDataset(t *testing.T) {
	r := &Registry{File: "reg.json", Datasets: []Dataset{
		{Name: "one", Version: "1.0"},
		{Name: "two", Version: "1.0"}, {Name: "two", Version: "2.0"},
	}}
	tests := []struct {
		arg, want string
		wantErr   []string
	}{
		{arg: "one@1.0", want: "one@1.0"},
		{arg: "one", want: "one@1.0"},
		{arg: "two@2.0", want: "two@2.0"},
		{arg: "two", wantErr: []string{"reg.json", `"two" has versions 1.0, 2.0`, "two@VERSION"}},
		{arg: "two@3.0", wantErr: []string{`"two" has no version "3.0"`, "1.0, 2.0"}},
		{arg: "three", wantErr: []string{`no dataset named "three"`, "one, two"}},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			d, err := r.Dataset(tc.arg)
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, s := range tc.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.ID())
		})
	}
}

func TestRegistryFetchLocal(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tasks", "a"), 0o755))
	abs := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.MkdirAll(abs, 0o755))
	ds := Dataset{Name: "d", Version: "1", Dir: dir, Tasks: []RegistryTask{
		{Name: "a", Path: "tasks/a"}, {Name: "abs", Path: abs},
	}}
	got, err := fetchDataset(context.Background(), ds, "")
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "tasks", "a"), abs}, got)

	ds.Tasks = append(ds.Tasks, RegistryTask{Name: "gone", Path: "tasks/gone"})
	_, err = fetchDataset(context.Background(), ds, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "task gone")
	assert.Contains(t, err.Error(), filepath.Join(dir, "tasks", "gone"))
}

// gitRepo is a local repository for fetch tests: two commits, a branch
// "main", an annotated tag "v1" on the first commit.
type gitRepo struct {
	dir, url      string
	first, second string
}

func newGitRepo(t *testing.T) gitRepo {
	t.Helper()
	testenv.Tool(t, "git")
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	testenv.Git(t, dir, "init", "-q")
	write("tasks/a/task.toml", "version = \"1.0\"\n")
	write("tasks/b/instruction.md", "first\n")
	write("README.md", "not a task\n")
	testenv.Git(t, dir, "add", "-A")
	testenv.Git(t, dir, "commit", "-q", "-m", "first")
	first := testenv.Git(t, dir, "rev-parse", "HEAD")
	testenv.Git(t, dir, "tag", "-a", "v1", "-m", "v1")
	write("tasks/b/instruction.md", "second\n")
	testenv.Git(t, dir, "commit", "-q", "-am", "second")
	second := testenv.Git(t, dir, "rev-parse", "HEAD")
	return gitRepo{dir: dir, url: "file://" + dir, first: first, second: second}
}

// countingGit runs git and counts the subcommands it was asked for.
type countingGit struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingGit) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[args[0]]++
	c.mu.Unlock()
	return hostgit.RunPlain(ctx, dir, args...)
}

func (c *countingGit) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[sub]
}

func readTaskFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	require.NoError(t, err)
	return string(b)
}

func TestRegistryFetchGitPinnedOnce(t *testing.T) {
	repo := newGitRepo(t)
	cache := t.TempDir()
	ds := Dataset{Name: "d", Version: "1", Tasks: []RegistryTask{
		{Name: "a", GitURL: repo.url, GitCommit: repo.first, Path: "tasks/a"},
		{Name: "b", GitURL: repo.url, GitCommit: strings.ToUpper(repo.first), Path: "tasks/b"},
	}}
	git := &countingGit{}
	dirs, err := fetchDatasetWith(context.Background(), ds, cache, git.run)
	require.NoError(t, err)
	require.Len(t, dirs, 2)
	assert.Equal(t, 1, git.count("fetch"), "one fetch for two tasks of one repository and commit")
	assert.Equal(t, 0, git.count("ls-remote"), "a full commit id is not resolved")
	assert.Equal(t, "first\n", readTaskFile(t, dirs[1], "instruction.md"), "the pinned commit, not the branch tip")
	assert.Equal(t, "version = \"1.0\"\n", readTaskFile(t, dirs[0], "task.toml"))
	assert.Equal(t, filepath.Join(cache, filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dirs[0])))), repo.first, "tasks", "a"), dirs[0])
	assert.NoDirExists(t, filepath.Join(filepath.Dir(dirs[0]), "..", ".git"), "the cache keeps the tree, not the repository")
	entries, err := os.ReadDir(filepath.Dir(filepath.Join(dirs[0], "..", "..")))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary fetch directory is left: %v", entries)

	again := &countingGit{}
	dirs2, err := fetchDatasetWith(context.Background(), ds, cache, again.run)
	require.NoError(t, err)
	assert.Equal(t, dirs, dirs2)
	assert.Equal(t, 0, again.count("fetch"), "a cached commit is not fetched again")
	assert.Equal(t, 0, again.count("init"))
}

func TestRegistryFetchGitRefs(t *testing.T) {
	repo := newGitRepo(t)
	tests := []struct {
		commit, wantSHA, wantText string
	}{
		{commit: "", wantSHA: repo.second, wantText: "second\n"},
		{commit: "HEAD", wantSHA: repo.second, wantText: "second\n"},
		{commit: "main", wantSHA: repo.second, wantText: "second\n"},
		{commit: "v1", wantSHA: repo.first, wantText: "first\n"},
	}
	cache := t.TempDir()
	for _, tc := range tests {
		t.Run("ref "+tc.commit, func(t *testing.T) {
			git := &countingGit{}
			ds := Dataset{Name: "d", Version: "1", Tasks: []RegistryTask{{Name: "b", GitURL: repo.url, GitCommit: tc.commit, Path: "tasks/b"}}}
			dirs, err := fetchDatasetWith(context.Background(), ds, cache, git.run)
			require.NoError(t, err)
			assert.Equal(t, 1, git.count("ls-remote"), "a ref is resolved on every fetch")
			assert.Equal(t, tc.wantText, readTaskFile(t, dirs[0], "instruction.md"))
			assert.Equal(t, tc.wantSHA, filepath.Base(filepath.Dir(filepath.Dir(dirs[0]))))
		})
	}
}

func TestRegistryFetchGitErrors(t *testing.T) {
	repo := newGitRepo(t)
	missing := strings.Repeat("0123456789", 4)
	tests := []struct {
		name string
		task RegistryTask
		want []string
	}{
		{name: "commit not in the repository",
			task: RegistryTask{Name: "a", GitURL: repo.url, GitCommit: missing, Path: "tasks/a"},
			want: []string{"dataset d@1", "task a", "fetch " + repo.url + " at " + missing}},
		{name: "abbreviated commit",
			task: RegistryTask{Name: "a", GitURL: repo.url, GitCommit: repo.first[:7], Path: "tasks/a"},
			want: []string{"names no branch, tag or commit", "abbreviated commit ids cannot be fetched"}},
		{name: "unknown branch",
			task: RegistryTask{Name: "a", GitURL: repo.url, GitCommit: "no-such-branch", Path: "tasks/a"},
			want: []string{`"no-such-branch" names no branch, tag or commit`}},
		{name: "no repository there",
			task: RegistryTask{Name: "a", GitURL: "file://" + filepath.Join(t.TempDir(), "none"), GitCommit: missing, Path: "tasks/a"},
			want: []string{"task a", "fetch file://"}},
		{name: "path not in the commit",
			task: RegistryTask{Name: "a", GitURL: repo.url, GitCommit: repo.first, Path: "tasks/zzz"},
			want: []string{"task a", "has no tasks/zzz at commit " + repo.first}},
		{name: "path is a file",
			task: RegistryTask{Name: "a", GitURL: repo.url, GitCommit: repo.first, Path: "README.md"},
			want: []string{"README.md", "is not a directory"}},
		{name: "path leaves the repository",
			task: RegistryTask{Name: "a", GitURL: repo.url, GitCommit: repo.first, Path: "../x"},
			want: []string{"inside the repository"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			ds := Dataset{Name: "d", Version: "1", Tasks: []RegistryTask{tc.task}}
			_, err := fetchDataset(context.Background(), ds, cache)
			require.Error(t, err)
			for _, s := range tc.want {
				assert.Contains(t, err.Error(), s)
			}
			leftovers, _ := filepath.Glob(filepath.Join(cache, "*", ".fetch-*"))
			assert.Empty(t, leftovers, "a failed fetch leaves no temporary directory")
		})
	}
}

func TestRegistryFetchGitNeedsCache(t *testing.T) {
	ds := Dataset{Name: "d", Version: "1", Tasks: []RegistryTask{{Name: "a", GitURL: "file:///x", GitCommit: strings.Repeat("a", 40), Path: "a"}}}
	_, err := fetchDataset(context.Background(), ds, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cache directory")
}

func TestRegistryFetchCancelled(t *testing.T) {
	repo := newGitRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ds := Dataset{Name: "d", Version: "1", Tasks: []RegistryTask{{Name: "a", GitURL: repo.url, GitCommit: repo.first, Path: "tasks/a"}}}
	_, err := fetchDataset(ctx, ds, t.TempDir())
	require.Error(t, err)
}

func TestRegistryFixture(t *testing.T) {
	r, err := loadRegistry(filepath.Join("..", "..", "fixtures", "harbor", "registry.json"))
	require.NoError(t, err)
	require.NotEmpty(t, r.Datasets)
	for _, d := range r.Datasets {
		dirs, err := fetchDataset(context.Background(), d, "")
		require.NoError(t, err, d.ID())
		for _, dir := range dirs {
			assert.FileExists(t, filepath.Join(dir, "task.toml"))
		}
	}
}

func FuzzLoadRegistry(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, `{}`, `[{"name": "d", "version": "1", "description": "", "tasks": []}]`,
		`[{"name": "d", "version": "1", "tasks": [{"name": "a", "path": "a"}]}]`,
		`[{"name": "d", "version": "1", "tasks": [{"name": "a", "git_url": "u", "git_commit_id": "HEAD", "path": "../a"}]}]`,
		`[{"name": "d", "version": "1"}, {"name": "d", "version": "1"}]`,
		`[{"name": 1}]`, `[[]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		datasets, err := parseRegistry(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range datasets {
			if strings.TrimSpace(d.Name) == "" || strings.TrimSpace(d.Version) == "" || seen[d.ID()] {
				t.Fatalf("accepted a dataset without a name or version, or twice: %+v", d)
			}
			seen[d.ID()] = true
			for _, task := range d.Tasks {
				if checkRegistryTask(task) != nil {
					t.Fatalf("accepted a bad task: %+v", task)
				}
			}
		}
	})
}
