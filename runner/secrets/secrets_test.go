package secrets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET": true, "DB_PASSWORD": true, "password": true,
		"api_key": true, "KEY": true, "MODEL": false, "MONKEY": false, "TOKENIZER": false, "MAX_TOKENS": false,
	} {
		assert.Equal(t, want, SecretName(name), name)
	}
}

func TestResolve(t *testing.T) {
	key := []byte("k")
	lookup := func(n string) (string, bool) {
		v, ok := map[string]string{"HOST_KEY": "sk-from-host-0001", "SHORT": "ab"}[n]
		return v, ok
	}
	env, err := Resolve(map[string]string{
		"OPENAI_API_KEY": "${HOST_KEY}", "FROM_FILE": "${FILE_ONLY}", "MODEL": "small",
		"GITHUB_TOKEN": "ghp-literal-0001", "MAX_TOKEN": "10",
	}, map[string]string{"FILE_ONLY": "file-secret-0001"}, lookup, key)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"OPENAI_API_KEY": "sk-from-host-0001", "FROM_FILE": "file-secret-0001", "FILE_ONLY": "file-secret-0001",
		"MODEL": "small", "GITHUB_TOKEN": "ghp-literal-0001", "MAX_TOKEN": "10",
	}, env.Values)
	assert.ElementsMatch(t, []string{"sk-from-host-0001", "file-secret-0001", "file-secret-0001", "ghp-literal-0001"}, env.Secrets)
	assert.Equal(t, "small", env.Keyed["MODEL"])
	assert.Equal(t, "10", env.Keyed["MAX_TOKEN"], "a short value of a secret-like name is a setting")
	assert.Equal(t, Keyed(key, "OPENAI_API_KEY", "sk-from-host-0001"), env.Keyed["OPENAI_API_KEY"])
	assert.NotContains(t, env.Keyed["OPENAI_API_KEY"], "sk-from-host")
	assert.NotEqual(t, Keyed(key, "A", "v1v1"), Keyed(key, "A", "v2v2"), "another value, another key")
	assert.NotEqual(t, Keyed(key, "A", "v1v1"), Keyed([]byte("other"), "A", "v1v1"), "keyed")

	_, err = Resolve(map[string]string{"OPENAI_API_KEY": "${UNSET}"}, nil, lookup, key)
	require.Error(t, err)
	assert.Equal(t, "env.OPENAI_API_KEY: ${UNSET} is not set in flightdeck's environment (nor in --env-file)", err.Error())
	_, err = Resolve(map[string]string{"X": "${SHORT}"}, nil, lookup, key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "env.X: X: a secret shorter than 4 characters")
}

func TestParseEnvFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.env")
	require.NoError(t, os.WriteFile(good, []byte("# keys\nA=1\nexport B = \"two words\"\n\nC='x=y'\n"), 0o600))
	vars, err := ParseEnvFile(good)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1", "B": "two words", "C": "x=y"}, vars)
	bad := filepath.Join(dir, "bad.env")
	require.NoError(t, os.WriteFile(bad, []byte("A=1\nnot a line sk-very-secret\n"), 0o600))
	_, err = ParseEnvFile(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad+":2: want NAME=VALUE")
	assert.NotContains(t, err.Error(), "sk-very-secret", "a bad line's value is not echoed")
}

func TestHashKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "secrets.key")
	k1, err := HashKey(path)
	require.NoError(t, err)
	k2, err := HashKey(path)
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "made once, then read")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}
