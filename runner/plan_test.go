package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

func fixtureSuite(t *testing.T, body string) *suite.Suite {
	t.Helper()
	abs, err := filepath.Abs(fixturesDir)
	require.NoError(t, err)
	s, err := suite.ParseSuite([]byte(body), filepath.Join(abs, "suite.yaml"))
	require.NoError(t, err)
	return s
}

func taskIDs(ts []*tasks.Task) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return ids
}

func TestResolveTasks(t *testing.T) {
	abs, _ := filepath.Abs(fixturesDir)
	tests := []struct {
		name      string
		suiteFile string
		opts      suite.Options
		want      []string
	}{
		{"task dirs", "tasks: [answer, script]\nvariants: {o: {agent: oracle}}\n", suite.Options{}, []string{"answer", "script"}},
		{"a dataset dir", "tasks: [.]\nvariants: {o: {agent: oracle}}\n", suite.Options{},
			[]string{"agent-timeout", "answer", "broken-build", "harbor", "malformed-reward", "missing-reward", "script", "verifier-timeout"}},
		{"a glob", "tasks: [\"*-reward\"]\nvariants: {o: {agent: oracle}}\n", suite.Options{}, []string{"malformed-reward", "missing-reward"}},
		{"include and exclude", "tasks: [.]\ninclude: [\"*e*\"]\nexclude: [\"*-reward\", \"*timeout\"]\nvariants: {o: {agent: oracle}}\n", suite.Options{},
			[]string{"answer", "broken-build"}},
		{"--task id filter", "tasks: [.]\nvariants: {o: {agent: oracle}}\n", suite.Options{Tasks: []string{"answer", "harb*"}}, []string{"answer", "harbor"}},
		{"--task dir replaces", "tasks: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{Tasks: []string{"script"}, Cwd: abs}, []string{"script"}},
		{"duplicates once", "tasks: [answer, ., answer]\ninclude: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{}, []string{"answer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fixtureSuite(t, tc.suiteFile)
			if tc.opts.Cwd == "" {
				tc.opts.Cwd = t.TempDir()
			}
			tc.opts.Retries = -1
			cfg, err := resolve(t.Context(), s, tc.opts)
			require.NoError(t, err)
			ts, refused, err := loadTasks(&cfg, s, tc.opts)
			require.NoError(t, err)
			assert.Empty(t, refused)
			assert.Equal(t, tc.want, taskIDs(ts))
			assert.Len(t, cfg.TaskDirs, len(tc.want), "the config records the chosen dirs")
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name, suiteFile string
		opts            suite.Options
		want            string
	}{
		{"missing task dir", "tasks: [answer, nope]\nvariants: {o: {agent: oracle}}\n", suite.Options{}, `suite.yaml:1: tasks[1] "nope": no such directory`},
		{"empty glob", "tasks: [\"zz*\"]\nvariants: {o: {agent: oracle}}\n", suite.Options{}, `tasks[0] "zz*": matches no directory`},
		{"empty variant", "tasks: [answer]\nvariants: {treatment: {}}\n", suite.Options{}, "variant treatment is empty: give it an agent"},
		{"unknown --variant", "tasks: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{Variants: []string{"x"}}, "--variant x: not a built-in agent (oracle, nop), nor a variant of the suite (it has o)"},
		{"bad --image-map", "tasks: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{ImageMap: []string{"a"}}, `--image-map "a"`},
		{"bad env map", "tasks: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{Getenv: onlyEnv(images.MapEnv, "x")}, images.MapEnv},
		{"bad env budget", "tasks: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{Getenv: onlyEnv(imagecache.BudgetEnv, "big")}, `FLIGHTDECK_IMAGE_BUDGET: "big" is not a size`},
		{"filtered to nothing", "tasks: [answer]\nexclude: [answer]\nvariants: {o: {agent: oracle}}\n", suite.Options{}, "no task is left after include/exclude, --include/--exclude and --task filters; the task ids there are: answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fixtureSuite(t, tc.suiteFile)
			tc.opts.Cwd, tc.opts.Retries = t.TempDir(), -1
			cfg, err := resolve(t.Context(), s, tc.opts)
			if err == nil {
				_, _, err = loadTasks(&cfg, s, tc.opts)
			}
			require.Error(t, err)
			var ue *suite.UsageError
			assert.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestResolveOverrides(t *testing.T) {
	s := fixtureSuite(t, `
tasks: [answer]
variants:
  oracle: {agent: oracle, expect: passed}
  cmd: {agent: command, command: x}
attempts: 2
concurrency: 3
retries: 2
images: {"a:1": "b:1", "c:1": "d:1"}
specs: [specs]
results: out
`)
	cwd := t.TempDir()
	cfg, err := resolve(t.Context(), s, suite.Options{Cwd: cwd, Retries: -1})
	require.NoError(t, err)
	assert.Equal(t, 2, cfg.Attempts)
	assert.Equal(t, 3, cfg.Concurrency)
	assert.Equal(t, 2, cfg.Retries)
	assert.Equal(t, filepath.Join(s.Dir, "out"), cfg.Results)
	assert.Equal(t, []string{filepath.Join(s.Dir, "specs")}, cfg.Specs)

	cfg, err = resolve(t.Context(), s, suite.Options{
		Cwd: cwd, Attempts: 5, Jobs: 1, Retries: 0, Results: "r", NoCache: true, Keep: true,
		Variants: []string{"nop", "oracle"}, ImageMap: []string{"c:1=e:1"},
		Getenv: func(k string) string {
			if k == images.MapEnv {
				return "a:1=f:1, g:1=h:1"
			}
			return ""
		},
	})
	require.NoError(t, err)
	assert.Equal(t, 5, cfg.Attempts)
	assert.Equal(t, 1, cfg.Concurrency)
	assert.Equal(t, 0, cfg.Retries)
	assert.Equal(t, filepath.Join(cwd, "r"), cfg.Results)
	assert.True(t, cfg.NoCache)
	assert.True(t, cfg.Keep)
	assert.Equal(t, map[string]string{"a:1": "f:1", "c:1": "e:1", "g:1": "h:1"}, cfg.Images, "env over the suite, flags over both")
	require.Len(t, cfg.Variants, 2)
	assert.Equal(t, suite.Variant{Name: "nop", Agent: suite.AgentNop, Expect: suite.ExpectFailed}, cfg.Variants[0], "a built-in agent named on the command line is added, held to failing")
	assert.Equal(t, "oracle", cfg.Variants[1].Name)
}

func TestCacheKeys(t *testing.T) {
	s := fixtureSuite(t, `
tasks: [answer, script]
variants:
  oracle: {agent: oracle, expect: passed}
  again: {agent: oracle}
  nop: {agent: nop}
  cmd: {agent: command, command: "echo 42 > answer.txt"}
  cmd2: {agent: command, command: "echo 41 > answer.txt"}
attempts: 2
`)
	opts := suite.Options{Cwd: t.TempDir(), Retries: -1}
	cfg, err := resolve(t.Context(), s, opts)
	require.NoError(t, err)
	images := cfg.Images
	ts, _, err := loadTasks(&cfg, s, opts)
	require.NoError(t, err)
	trials, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	require.Len(t, trials, 2*5*2)
	keys := map[string]string{}
	for _, tr := range trials {
		keys[tr.ID] = tr.Key
	}
	assert.Equal(t, keys["answer__oracle__1"], keys["answer__again__1"], "the variant's name and expectation are not part of its definition")
	assert.NotEqual(t, keys["answer__oracle__1"], keys["answer__oracle__2"], "attempts differ")
	assert.NotEqual(t, keys["answer__oracle__1"], keys["script__oracle__1"], "tasks differ")
	assert.NotEqual(t, keys["answer__cmd__1"], keys["answer__cmd2__1"], "commands differ")
	assert.NotEqual(t, keys["answer__oracle__1"], keys["answer__nop__1"], "agents differ")

	again, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	assert.Equal(t, trials[0].Key, again[0].Key, "keys are stable")
	other, err := planTrials(cfg, ts, nil, nil, "sha256:another-build")
	require.NoError(t, err)
	assert.NotEqual(t, trials[0].Key, other[0].Key, "another build of flightdeck does not reuse this one's results")

	cfg.TimeoutMultiplier.Agent = 2
	longer, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	assert.NotEqual(t, trials[0].Key, longer[0].Key, "the agent's timeout is part of the key")

	cfg.TimeoutMultiplier.Agent = 1
	cfg.Images = map[string]string{"flightdeck/base:bookworm": "other/base:1"}
	mapped, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	assert.NotEqual(t, trials[0].Key, mapped[0].Key, "an image-map entry that applies is part of the key")
	cfg.Images = map[string]string{"unrelated:1": "other:1"}
	unrelated, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	assert.Equal(t, trials[0].Key, unrelated[0].Key, "an entry that does not apply is not")

	cfg.Images = images
	again, err = planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	require.Equal(t, trials[0].Key, again[0].Key)
	cfg.RewardKey = "correctness"
	keyed, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	assert.NotEqual(t, trials[0].Key, keyed[0].Key, "the reward key decides the outcome: it is part of the key")
}

func TestCacheKeyFollowsTheSolution(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "answer"), os.DirFS(filepath.Join(fixturesDir, "answer"))))
	load := func() string {
		task, err := tasks.Load(filepath.Join(dir, "answer"), tasks.LoadOptions{Local: true})
		require.NoError(t, err)
		trials, err := planTrials(suite.Config{Variants: []suite.Variant{{Name: "o", Agent: suite.AgentOracle}}, Attempts: 1,
			TimeoutMultiplier: suite.Multipliers{Agent: 1, Verifier: 1, Build: 1}}, []*tasks.Task{task}, nil, nil, "")
		require.NoError(t, err)
		return trials[0].Key
	}
	before := load()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "answer", "solution", "solve.sh"), []byte("echo 43 > answer.txt\n"), 0o755))
	assert.NotEqual(t, before, load(), "a changed solution runs the oracle again")
}

func TestPlanTrialsSpecs(t *testing.T) {
	s := fixtureSuite(t, "tasks: [answer, script]\nvariants: {treatment: {agent: nop}, baseline: {agent: nop}}\n")
	opts := suite.Options{Cwd: t.TempDir(), Retries: -1}
	cfg, err := resolve(t.Context(), s, opts)
	require.NoError(t, err)
	ts, _, err := loadTasks(&cfg, s, opts)
	require.NoError(t, err)
	specs := []grader.Spec{
		{ID: "all", Pending: "x"},
		{ID: "answer-treatment", AppliesWhen: grader.AppliesWhen{TaskID: "answer", Variant: "treatment"}, Pending: "x"},
	}
	trials, err := planTrials(cfg, ts, specs, nil, "")
	require.NoError(t, err)
	for _, tr := range trials {
		var ids []string
		for _, sp := range tr.Specs {
			ids = append(ids, sp.ID)
		}
		if tr.ID == "answer__treatment__1" {
			assert.Equal(t, []string{"all", "answer-treatment"}, ids)
		} else {
			assert.Equal(t, []string{"all"}, ids, tr.ID)
		}
	}
}

func TestTrialID(t *testing.T) {
	assert.Equal(t, "semver__oracle__1", suite.TrialID("semver", "oracle", 1))
	assert.Equal(t, "a-b-c__v__12", suite.TrialID("a/b c", "v", 12))
}

// onlyEnv is an environment with one variable.
func onlyEnv(key, value string) func(string) string {
	return func(k string) string {
		if k == key {
			return value
		}
		return ""
	}
}

func TestResolveImageBudget(t *testing.T) {
	s := fixtureSuite(t, "tasks: [answer]\nvariants: {o: {agent: oracle}}\n")
	cfg, err := resolve(t.Context(), s, suite.Options{Cwd: t.TempDir(), Retries: -1, Getenv: onlyEnv(imagecache.BudgetEnv, "2GB")})
	require.NoError(t, err)
	assert.Equal(t, int64(2<<30), cfg.ImageBudget, "from the environment")
	s = fixtureSuite(t, "tasks: [answer]\nvariants: {o: {agent: oracle}}\nimage_budget: 5GB\n")
	cfg, err = resolve(t.Context(), s, suite.Options{Cwd: t.TempDir(), Retries: -1, Getenv: onlyEnv(imagecache.BudgetEnv, "2GB")})
	require.NoError(t, err)
	assert.Equal(t, int64(5<<30), cfg.ImageBudget, "the suite's wins")
}

// Each of task verify's attacks is a trial of its own: none takes
// another's cached result, nor nop's.
func TestCacheKeysOfAttacks(t *testing.T) {
	s := fixtureSuite(t, "tasks: [answer]\nvariants:\n  nop: {agent: nop}\n")
	for _, a := range agent.Attacks {
		s.Variants = append(s.Variants, suite.Variant{Name: results.VerifyAttackPrefix + a, Agent: suite.AgentAttack, Attack: a, Attempts: 1})
	}
	opts := suite.Options{Cwd: t.TempDir(), Retries: -1}
	cfg, err := resolve(t.Context(), s, opts)
	require.NoError(t, err)
	ts, _, err := loadTasks(&cfg, s, opts)
	require.NoError(t, err)
	trials, err := planTrials(cfg, ts, nil, nil, "")
	require.NoError(t, err)
	require.Len(t, trials, 1+len(agent.Attacks))
	seen := map[string]string{}
	for _, tr := range trials {
		if other, dup := seen[tr.Key]; dup {
			t.Errorf("%s has the key of %s", tr.ID, other)
		}
		seen[tr.Key] = tr.ID
	}
}
