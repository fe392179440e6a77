package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A service's secrets and configs from files of the task are mounted
// read-only where compose mounts them; its build args and target are kept.
func TestLoadComposeSecretsConfigsBuild(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "environment")
	require.NoError(t, os.MkdirAll(filepath.Join(env, "svc"), 0o755))
	for _, f := range []string{"token.txt", "app.conf", "svc/Dockerfile"} {
		require.NoError(t, os.WriteFile(filepath.Join(env, f), []byte("x\n"), 0o644))
	}
	file := filepath.Join(env, "docker-compose.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`services:
  svc:
    build:
      context: ./svc
      target: run
      args: {A: one, B: null, C: null}
    secrets: [token, {source: token, target: other}, {source: token, target: /etc/abs}]
    configs: [conf, {source: conf, target: /etc/app.conf}]
secrets:
  token: {file: ./token.txt}
configs:
  conf: {file: ./app.conf}
`), 0o644))
	c, issues, err := loadCompose(dir, file, map[string]string{"B": "from-env"}, nil)
	require.NoError(t, err)
	require.Empty(t, issues)
	require.Len(t, c.Services, 1)
	s := c.Services[0]
	require.NotNil(t, s.Build)
	assert.Equal(t, map[string]string{"A": "one", "B": "from-env"}, s.Build.Args, "C has no value anywhere: left out")
	assert.Equal(t, "run", s.Build.Target)
	token, conf := filepath.Join(env, "token.txt"), filepath.Join(env, "app.conf")
	assert.Equal(t, []ComposeVolume{
		{HostPath: token, Target: "/run/secrets/token", ReadOnly: true},
		{HostPath: token, Target: "/run/secrets/other", ReadOnly: true},
		{HostPath: token, Target: "/etc/abs", ReadOnly: true},
		{HostPath: conf, Target: "/conf", ReadOnly: true},
		{HostPath: conf, Target: "/etc/app.conf", ReadOnly: true},
	}, s.Volumes)
}

func TestLoadComposeRefusesSecrets(t *testing.T) {
	tests := []struct{ name, top, field, words string }{
		{"environment", "secrets:\n  s: {environment: HOME}\n", "services.svc.secrets", "only a file of the task"},
		{"external", "secrets:\n  s: {external: true}\n", "services.svc.secrets", "external"},
		{"outside", "secrets:\n  s: {file: /etc/passwd}\n", "services.svc.secrets", "outside the task directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := filepath.Join(dir, "environment")
			require.NoError(t, os.MkdirAll(env, 0o755))
			file := filepath.Join(env, "docker-compose.yaml")
			require.NoError(t, os.WriteFile(file, []byte("services:\n  svc:\n    image: x\n    secrets: [s]\n"+tc.top), 0o644))
			_, issues, err := loadCompose(dir, file, nil, nil)
			require.NoError(t, err)
			require.Len(t, issues, 1)
			assert.Equal(t, tc.field, issues[0].field)
			assert.Equal(t, "compose.secrets", issues[0].rule)
			assert.Contains(t, issues[0].message, tc.words)
			assert.Contains(t, issues[0].message, `service "svc"`)
		})
	}
}

// service_healthy on a service that certainly has no healthcheck is
// refused at load, as compose refuses it at up; one with a healthcheck, or
// an image that may have its own, is not.
func TestLoadComposeHealthyConditionNeedsAHealthcheck(t *testing.T) {
	tests := []struct {
		name, store, dockerfile string
		refused                 bool
	}{
		{"built without HEALTHCHECK", "    build: ./store\n", "FROM x\n", true},
		{"built with HEALTHCHECK", "    build: ./store\n", "FROM x\nHEALTHCHECK CMD true\n", false},
		{"a healthcheck in the file", "    build: ./store\n    healthcheck: {test: [CMD, 'true']}\n", "FROM x\n", false},
		{"an image, which may have its own", "    image: postgres:16\n", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := filepath.Join(dir, "environment")
			require.NoError(t, os.MkdirAll(filepath.Join(env, "store"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(env, "store", "Dockerfile"), []byte(tc.dockerfile), 0o644))
			file := filepath.Join(env, "docker-compose.yaml")
			require.NoError(t, os.WriteFile(file, []byte("services:\n  main:\n    depends_on:\n      store: {condition: service_healthy}\n  store:\n"+tc.store), 0o644))
			_, issues, err := loadCompose(dir, file, nil, nil)
			require.NoError(t, err)
			if !tc.refused {
				assert.Empty(t, issues)
				return
			}
			require.Len(t, issues, 1)
			assert.Equal(t, "services.main.depends_on.store.condition", issues[0].field)
			assert.Contains(t, issues[0].message, `service "store" has no healthcheck`)
		})
	}
}

// Harbor's variables reach the file, over the task's own: the resources
// (CPUS, MEMORY) and its log dirs, a bind of ${HOST_ARTIFACTS_PATH} being
// the trial's artifacts dir, shared with main; the verifier's is refused,
// naming the way to share.
func TestLoadComposeHarborVariables(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "environment")
	require.NoError(t, os.MkdirAll(env, 0o755))
	file := filepath.Join(env, "docker-compose.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`services:
  helper:
    image: base
    environment:
      - CPUS=${CPUS}
      - MEMORY=${MEMORY}
      - WHERE=${ENV_ARTIFACTS_PATH}
      - MINE=${MINE}
    volumes:
      - ${HOST_ARTIFACTS_PATH}:${ENV_ARTIFACTS_PATH}
      - ${HOST_AGENT_LOGS_PATH}:/agent-logs:ro
`), 0o644))
	task := &Task{Dir: dir}
	task.Config.Environment.CPUs, task.Config.Environment.MemoryMB = 2, 2048
	c, issues, err := loadCompose(dir, file, map[string]string{"CPUS": "64", "MINE": "mine"}, task.composeInfraVars())
	require.NoError(t, err)
	require.Empty(t, issues)
	s := c.Services[0]
	assert.ElementsMatch(t, []string{"CPUS=2", "MEMORY=2048M", "WHERE=/logs/artifacts", "MINE=mine"}, s.Env, "Harbor's variables win over the task's")
	assert.Equal(t, []ComposeVolume{{TrialLogs: "ARTIFACTS", Target: "/logs/artifacts"}, {TrialLogs: "AGENT_LOGS", Target: "/agent-logs", ReadOnly: true}}, s.Volumes)

	require.NoError(t, os.WriteFile(file, []byte("services:\n  helper:\n    image: base\n    volumes: ['${HOST_VERIFIER_LOGS_PATH}:/v']\n"), 0o644))
	_, issues, err = loadCompose(dir, file, nil, nil)
	require.NoError(t, err)
	require.Len(t, issues, 1)
	assert.Contains(t, issues[0].message, "share files through ${HOST_ARTIFACTS_PATH} instead")
}
