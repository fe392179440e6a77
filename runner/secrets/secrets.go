// Package secrets resolves the secrets a suite's agents need (a variant
// env value written ${NAME}, the variables of an --env-file) and keeps
// their values out of everything a run writes: a Redactor replaces them
// with [REDACTED], and a keyed hash stands for them in cache keys.
package secrets

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces a secret's value wherever it would be written.
const Mask = "[REDACTED]"

// minLen is the shortest value redacted: a shorter one would mask
// unrelated text (a digit, a word) everywhere.
const minLen = 4

// ref is a whole value that names a variable: ${NAME}.
var ref = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// IsRef reports whether an env value is ${NAME}, and the name.
func IsRef(value string) (string, bool) {
	m := ref.FindStringSubmatch(value)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// SecretName reports whether a variable's name says it holds a secret:
// *_KEY, *_TOKEN, *_SECRET, *PASSWORD* (any case), or KEY, TOKEN, SECRET.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, suffix := range []string{"KEY", "TOKEN", "SECRET"} {
		if n == suffix || strings.HasSuffix(n, "_"+suffix) {
			return true
		}
	}
	return strings.Contains(n, "PASSWORD")
}

// Env is a variant's environment resolved for a run.
type Env struct {
	Values map[string]string // what the agent gets
	Keyed  map[string]string // what the cache key gets: secrets as keyed hashes
	// Secrets are the values to redact.
	Secrets []string
}

// Resolve resolves a variant's env: ${NAME} from the env file's variables,
// else from lookup (flightdeck's environment); the env file's variables
// are added to every variant's env. Values given as ${NAME} or from the
// env file are secrets, and so are literal values of names that say so
// (SecretName). A ${NAME} that is not set, or a secret too short to
// redact, is an error naming it.
func Resolve(env map[string]string, file map[string]string, lookup func(string) (string, bool), hashKey []byte) (Env, error) {
	out := Env{Values: map[string]string{}, Keyed: map[string]string{}}
	secret := func(name, value string) error {
		if len(value) < minLen {
			return fmt.Errorf("%s: a secret shorter than %d characters cannot be kept out of the results reliably", name, minLen)
		}
		out.Secrets = append(out.Secrets, value)
		out.Keyed[name] = Keyed(hashKey, name, value)
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(file)) {
		out.Values[name] = file[name]
		if err := secret(name, file[name]); err != nil {
			return Env{}, fmt.Errorf("--env-file: %w", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		value := env[name]
		if v, ok := IsRef(value); ok {
			got, set := file[v]
			if !set {
				got, set = lookup(v)
			}
			if !set {
				return Env{}, fmt.Errorf("env.%s: ${%s} is not set in flightdeck's environment (nor in --env-file)", name, v)
			}
			out.Values[name] = got
			if err := secret(name, got); err != nil {
				return Env{}, fmt.Errorf("env.%s: %w", name, err)
			}
			continue
		}
		out.Values[name] = value
		out.Keyed[name] = value
		// A literal value of a name that says secret is one, unless it is
		// too short to be (MAX_TOKENS: 10 is a setting).
		if SecretName(name) && len(value) >= minLen {
			out.Secrets = append(out.Secrets, value)
			out.Keyed[name] = Keyed(hashKey, name, value)
		}
	}
	return out, nil
}

// Keyed is a secret's stand-in in a cache key: its name and an HMAC of its
// value under the user's key, so that a changed secret changes the key and
// the key does not give the secret away.
func Keyed(key []byte, name, value string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(name + "\x00" + value))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// HashKey reads the user's key for Keyed from path, making it (random,
// 0600) when missing.
func HashKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil && len(data) >= 32 {
		return data, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the secrets' hash key: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("write the secrets' hash key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it first: use its.
		return HashKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("write the secrets' hash key: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(key); err != nil {
		return nil, fmt.Errorf("write the secrets' hash key: %w", err)
	}
	return key, nil
}

// ParseEnvFile reads KEY=VALUE lines (blank lines and # comments skipped;
// a value may be quoted with ' or "), naming the file and line of a bad
// one.
func ParseEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--env-file: %w", err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !ValidName(k) {
			// The line is not shown: it may hold a secret.
			return nil, fmt.Errorf("%s:%d: want NAME=VALUE (a name of letters, digits and _)", path, n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vars[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vars, nil
}

// ValidName reports whether s is an environment variable name: letters,
// digits and _, not starting with a digit.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
