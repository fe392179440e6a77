package runner

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/secrets"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// resolveSecrets resolves every variant's env for the run (${NAME} from
// --env-file or flightdeck's environment, the env file's variables added)
// and gathers the values that must never be written. An unset ${NAME}
// refuses the run, naming the variant and the variable.
func (r *Runner) resolveSecrets(cfg suite.Config) (map[string]secrets.Env, *secrets.Redactor, error) {
	var file map[string]string
	if cfg.EnvFile != "" {
		var err error
		if file, err = secrets.ParseEnvFile(cfg.EnvFile); err != nil {
			return nil, nil, err
		}
	}
	key, err := r.secretsKey()
	if err != nil {
		return nil, nil, err
	}
	envs := map[string]secrets.Env{}
	var values []string
	for _, v := range cfg.Variants {
		for _, k := range slices.Sorted(maps.Keys(v.Env)) {
			if v.Env[k] == secrets.Mask {
				return nil, nil, fmt.Errorf("variant %s: env.%s was redacted when the run was recorded: give it as ${%s} (from flightdeck's environment or --env-file)", v.Name, k, k)
			}
		}
		if len(v.Env) == 0 && len(file) == 0 {
			continue
		}
		e, err := secrets.Resolve(v.Env, file, hostenv.Lookup, key)
		if err != nil {
			return nil, nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		envs[v.Name] = e
		values = append(values, e.Secrets...)
	}
	return envs, secrets.NewRedactor(values...), nil
}

// secretsKey is the key of the secrets' hashes in cache keys: the user's,
// kept beside the image index, else one for this process (its cache keys
// then change with every run).
func (r *Runner) secretsKey() ([]byte, error) {
	if r.ImageIndex != "" {
		return secrets.HashKey(filepath.Join(r.ImageIndex, "secrets.key"))
	}
	key := make([]byte, 32)
	_, err := rand.Read(key)
	return key, err
}

// redactingWriter writes through a Redactor: progress lines carry an
// agent's or a grader's words.
type redactingWriter struct {
	mu  sync.Mutex
	w   io.Writer
	red *secrets.Redactor
}

func (w *redactingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(w.red.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactTrial masks the secrets in everything a trial wrote, and in its
// result before it is written.
func (s *runState) redactTrial(dir string, res *results.Result) {
	if s.redact.Empty() {
		return
	}
	if err := s.redact.Tree(dir); err != nil {
		s.progress.Line("redact secrets: " + err.Error())
	}
	data, err := json.Marshal(res)
	if err != nil {
		return
	}
	if out := s.redact.Bytes(data); len(out) != len(data) {
		var clean results.Result
		if json.Unmarshal(out, &clean) == nil {
			*res = clean
		}
	}
}

// redactRunFiles masks the secrets in the run's own files (run.json,
// junit.xml, reports) and in the dirs of its trials without a result:
// those an interruption cut short, whose files were never masked after
// their trial (a trial with a result was, before the result was written).
// The work dir, there only when the user keeps it (--keep), is left as the
// agents left it.
func (s *runState) redactRunFiles() {
	if s.redact.Empty() {
		return
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(s.dir, e.Name())
		var err error
		switch {
		case e.Type().IsRegular():
			err = s.redact.File(p)
		case e.IsDir() && e.Name() != workDirName && !fileExists(filepath.Join(p, results.ResultFile)):
			err = s.redact.Tree(p)
		}
		if err != nil {
			s.progress.Line("redact secrets: " + err.Error())
		}
	}
}

// redactVariants is variants as run.json records them: a literal value
// that is a secret masked (${NAME} references are kept as written).
func redactVariants(vs []suite.Variant, red *secrets.Redactor) []suite.Variant {
	if red.Empty() {
		return vs
	}
	out := slices.Clone(vs)
	for i, v := range out {
		if len(v.Env) == 0 {
			continue
		}
		env := maps.Clone(v.Env)
		for k, val := range env {
			env[k] = red.String(val)
		}
		out[i].Env = env
	}
	return out
}
