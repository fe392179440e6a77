package trialnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/flightdeck/flightdeck/tasks"
)

// webCompose is a task with two services: db (an image, a healthcheck,
// a named volume, names of its own) and web (built, waiting for db to be
// healthy), main waiting for web to start, with a volume shared with web
// and a file of the task bound in.
const webCompose = `services:
  main:
    depends_on:
      web:
        condition: service_started
    environment:
      DB_URL: postgres://db:5432
    volumes:
      - shared:/shared
      - ./seed.txt:/seed.txt
  db:
    image: postgres:16
    hostname: database
    container_name: pg
    networks:
      default:
        aliases: [postgres]
    healthcheck:
      test: ["CMD", "pg_isready"]
      interval: 2s
      timeout: 1s
      start_period: 3s
      retries: 4
    environment:
      POSTGRES_PASSWORD: secret
    user: "999"
    working_dir: /var/lib/postgresql
    tmpfs: [/run/pg]
    volumes:
      - dbdata:/var/lib/postgresql/data
  web:
    build:
      context: ./web
      args:
        MODE: test
      target: serve
    init: true
    entrypoint: ["/bin/web"]
    command: ["--port", "8080"]
    depends_on:
      db:
        condition: service_healthy
    volumes:
      - shared:/srv/shared:ro
      - ./seed.txt:/srv/seed.txt
volumes:
  shared:
  dbdata:
`

var webFiles = map[string]string{
	"environment/seed.txt":       "seed\n",
	"environment/web/Dockerfile": "FROM python:3.12 AS serve\nCOPY . /srv\n",
}

// healthy makes every service container healthy from the start.
func healthy(c *sandboxtest.Container) {
	if c.Spec.Labels[labelService] != "" {
		c.Health = "healthy"
	}
}

// Join starts the services after those they depend on, each on the
// trial's network under its names, with the trial's volumes, and puts main
// among them; the cleanups keep each service's output and remove the
// services, then the volumes, then the network.
func TestComposeJoin(t *testing.T) {
	task := writeTask(t, network{}, webCompose, webFiles)
	h := newHarness(t, task)
	h.trial.Multiplier = suite.Multipliers{Build: 2}
	h.fake.Started = healthy
	var builds []sandbox.BuildSpec
	h.fake.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
		builds = append(builds, spec)
		return sandbox.Image{Ref: "img/" + spec.Name, ID: "sha256:" + spec.Name}, nil
	}
	n := h.net(t)
	require.NotNil(t, n.ComposeFile)
	spec := sandbox.ContainerSpec{Env: []string{"TASK=1"}, Mounts: []sandbox.Mount{{HostPath: "/host/logs", ContainerPath: "/logs"}}}
	require.NoError(t, n.Join(t.Context(), &spec))

	assert.Equal(t, []string{"services", "agent"}, h.phases)
	assert.Equal(t, []string{"CreateNetwork", "CreateVolume", "CreateVolume", "EnsureImage", "Start", "State c1", "EnsureImage", "Start"},
		h.fake.Calls(), "db is healthy before web starts")
	assert.Equal(t, []sandbox.NetworkSpec{{RunID: testRun, TrialID: testTrial}}, h.eng.networks,
		"the trial's own network, with a route out (both phases are public)")
	assert.Equal(t, []string{testRun + " " + testTrial + " dbdata", testRun + " " + testTrial + " shared"}, h.eng.volumes)

	order, by := serviceContainers(h.fake)
	require.Equal(t, []string{"db", "web"}, order)
	db, web := by["db"].Spec, by["web"].Spec
	assert.Equal(t, "img/svc-db", db.Image)
	assert.Equal(t, "db-"+testTrial, db.Name)
	assert.Equal(t, testRun, db.RunID)
	assert.Equal(t, testTrial, db.TrialID)
	assert.Equal(t, map[string]string{sandbox.LabelPhase: "service", labelService: "db"}, db.Labels)
	assert.Equal(t, []string{"POSTGRES_PASSWORD=secret"}, db.Env)
	assert.Equal(t, "999", db.User)
	assert.Equal(t, "/var/lib/postgresql", db.Workdir)
	assert.True(t, db.NoInit, "no init: unless the service asks")
	assert.Empty(t, db.Mounts)
	require.NotNil(t, db.Service)
	assert.Equal(t, testNet, db.Service.NetworkName)
	assert.Equal(t, []string{"db", "postgres", "pg"}, db.Service.Aliases)
	assert.Equal(t, "database", db.Service.Hostname)
	assert.Equal(t, []string{"/run/pg"}, db.Service.Tmpfs)
	assert.Equal(t, []sandbox.VolumeMount{{Volume: "flightdeck-vol-" + testTrial + "-dbdata", Target: "/var/lib/postgresql/data"}}, db.Service.Volumes)
	assert.Equal(t, &sandbox.Healthcheck{Test: []string{"CMD", "pg_isready"}, Interval: 2 * time.Second, Timeout: time.Second,
		StartPeriod: 3 * time.Second, Retries: 4}, db.Service.Healthcheck)

	assert.Equal(t, "img/svc-web", web.Image)
	assert.False(t, web.NoInit, "init: true")
	assert.Equal(t, []string{"/bin/web"}, web.Service.Entrypoint)
	assert.Equal(t, []string{"--port", "8080"}, web.Service.Cmd)
	assert.Nil(t, web.Service.Healthcheck)
	assert.Equal(t, []string{"web"}, web.Service.Aliases)
	assert.Equal(t, []sandbox.VolumeMount{{Volume: "flightdeck-vol-" + testTrial + "-shared", Target: "/srv/shared", ReadOnly: true}}, web.Service.Volumes)
	seed := task.Path(tasks.EnvironmentDir, "seed.txt")
	assert.Equal(t, []sandbox.Mount{{HostPath: seed, ContainerPath: "/srv/seed.txt", ReadOnly: true}}, web.Mounts,
		"a file of the task is bound read-only")

	require.Len(t, builds, 2)
	assert.Equal(t, "svc-db", builds[0].Name)
	assert.Equal(t, "postgres:16", builds[0].DockerImage)
	assert.Equal(t, filepath.Join(h.trial.Dir, ServicesDir, "db.build.log"), builds[0].LogPath)
	assert.Equal(t, 20*time.Minute, builds[0].Timeout, "the build timeout, multiplied")
	assert.Equal(t, task.Path(tasks.EnvironmentDir, "web"), builds[1].ContextDir)
	assert.Equal(t, "Dockerfile", builds[1].Dockerfile)
	assert.Equal(t, map[string]string{"MODE": "test"}, builds[1].Args)
	assert.Equal(t, "serve", builds[1].Target)
	assert.Empty(t, builds[1].DockerImage)
	assert.Equal(t, []string{"img/svc-db", "img/svc-web"}, h.touched, "each service image's use is recorded")

	assert.Equal(t, []string{"DB_URL=postgres://db:5432", "TASK=1"}, spec.Env, "the compose file's env under the task's")
	assert.Equal(t, []sandbox.Mount{{HostPath: "/host/logs", ContainerPath: "/logs"}, {HostPath: seed, ContainerPath: "/seed.txt", ReadOnly: true}},
		spec.Mounts)
	require.NotNil(t, n.Service)
	assert.Equal(t, testNet, n.Service.NetworkName)
	assert.Equal(t, []string{"main"}, n.Service.Aliases)
	assert.Equal(t, []string{"sleep", "infinity"}, n.Service.Cmd, "Harbor's keep-alive for main")
	assert.Equal(t, []sandbox.VolumeMount{{Volume: "flightdeck-vol-" + testTrial + "-shared", Target: "/shared"}}, n.Service.Volumes)
	assert.Equal(t, by["db"].ID, n.ServiceContainer("db"))
	assert.Equal(t, by["web"].ID, n.ServiceContainer("web"))
	assert.Empty(t, n.ServiceContainer("main"), "main is not a service's container")
	assert.Empty(t, n.ServiceContainer("nosuch"))

	before := len(h.fake.Calls())
	h.cleanup(t)
	assert.Equal(t, []string{"Logs c2", "Remove c2", "Logs c1", "Remove c1", "RemoveVolume", "RemoveVolume", "RemoveNetwork"},
		h.callsSince(before), "the services first, the network last")
	assert.Empty(t, h.fake.Live())
	assert.Equal(t, []string{testNet}, h.eng.removedNetworks)
	assert.ElementsMatch(t, []string{"flightdeck-vol-" + testTrial + "-dbdata", "flightdeck-vol-" + testTrial + "-shared"}, h.eng.removedVolumes)
	for _, svc := range []string{"db", "web"} {
		assert.FileExists(t, filepath.Join(h.trial.Dir, ServicesDir, svc+".log"))
	}
}

// Under Keep the network and volumes stay (the containers are the
// trial's Remove's to keep).
func TestComposeKeep(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, webCompose, webFiles))
	h.trial.Keep = true
	h.fake.Started = healthy
	n := h.net(t)
	require.NoError(t, n.Join(t.Context(), &sandbox.ContainerSpec{}))
	h.cleanup(t)
	assert.Empty(t, h.eng.removedNetworks)
	assert.Empty(t, h.eng.removedVolumes)
	assert.NotContains(t, h.fake.Calls(), "RemoveNetwork")
}

// The services' network has no route out when a phase of the trial has
// no network of its own (main gets the engine's besides when online) or
// the trial is native; behind an egress gateway it has one.
func TestComposeNetworkInternal(t *testing.T) {
	tests := []struct {
		name            string
		net             network
		native, offline bool
		internal        bool
	}{
		{name: "public", internal: false},
		{name: "no network", net: network{env: `network_mode = "no-network"`}, internal: true},
		{name: "offline agent", net: network{agent: `network_mode = "no-network"`}, internal: true},
		{name: "offline verifier", net: network{verifier: `network_mode = "no-network"`}, internal: true},
		{name: "verifier offline variant", offline: true, internal: true},
		{name: "native", native: true, internal: true},
		{name: "allowlist", net: network{env: `allowed_hosts = ["example.com"]`}, internal: false},
		{name: "allowlist, offline verifier", net: network{agent: `allowed_hosts = ["example.com"]`, verifier: `network_mode = "no-network"`}, internal: false},
		{name: "native allowlist", native: true, net: network{env: `allowed_hosts = ["example.com"]`}, internal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, tt.net, "services:\n  cache:\n    image: redis:7\n", nil))
			h.trial.Native, h.trial.VerifierOffline = tt.native, tt.offline
			n := h.net(t)
			require.NoError(t, n.Join(t.Context(), &sandbox.ContainerSpec{}))
			require.Len(t, h.eng.networks, 1)
			assert.Equal(t, tt.internal, h.eng.networks[0].Internal)
		})
	}
}

// dependsCompose is a task whose main waits for dep on condition.
func dependsCompose(condition string) string {
	return `services:
  main:
    depends_on:
      dep:
        condition: ` + condition + `
  dep:
    image: redis:7
    healthcheck:
      test: ["CMD", "true"]
`
}

// Main waits for each service's condition as the engine reports it; a
// service that fails it fails Join naming both and where its output is.
func TestComposeWaitConditions(t *testing.T) {
	type state struct {
		running bool
		health  string
		last    string
		exit    int
		missing bool
	}
	tests := []struct {
		name      string
		condition string
		states    []state // State's answers in turn; the last one repeats
		wantErr   string  // "" for none
		failed    bool    // the error is errServiceFailed
	}{
		{name: "started", condition: tasks.ConditionStarted, states: []state{{running: false, exit: 1}}},
		{name: "healthy", condition: tasks.ConditionHealthy, states: []state{{running: true, health: "healthy"}}},
		{name: "healthy after starting", condition: tasks.ConditionHealthy,
			states: []state{{running: true, health: "starting"}, {running: true, health: "starting"}, {running: true, health: "healthy"}}},
		{name: "unhealthy", condition: tasks.ConditionHealthy, states: []state{{running: true, health: "starting"}, {running: true, health: "unhealthy"}},
			wantErr: "main waits for dep to be healthy: service failed: its healthcheck failed (its output is in services/dep.log)", failed: true},
		{name: "unhealthy with the last probe", condition: tasks.ConditionHealthy,
			states:  []state{{running: true, health: "unhealthy", last: "exit 1: connection refused"}},
			wantErr: "its healthcheck failed (the last probe: exit 1: connection refused)", failed: true},
		{name: "no healthcheck on the engine", condition: tasks.ConditionHealthy, states: []state{{running: true}},
			wantErr: "main waits for dep to be healthy: service failed: it has no healthcheck", failed: true},
		{name: "exited before healthy", condition: tasks.ConditionHealthy, states: []state{{running: false, health: "starting", exit: 137}},
			wantErr: "it exited (exit code 137)", failed: true},
		{name: "completed", condition: tasks.ConditionCompleted, states: []state{{running: true}, {running: false}}},
		{name: "completed with an error", condition: tasks.ConditionCompleted, states: []state{{running: true}, {running: false, exit: 3}},
			wantErr: "main waits for dep to be completed_successfully: service failed: it exited with code 3", failed: true},
		// A removed container reports exit code 0: gone is not done.
		{name: "gone before it completed", condition: tasks.ConditionCompleted, states: []state{{running: true}, {missing: true}},
			wantErr: "main waits for dep to be completed_successfully: service failed: its container is gone", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, network{}, dependsCompose(tt.condition), nil))
			asked := 0
			h.fake.StateOf = func(_ *sandboxtest.Container, i int, st sandbox.State) (sandbox.State, error) {
				asked++
				s := tt.states[min(i, len(tt.states)-1)]
				st.Running, st.Health, st.HealthLast, st.ExitCode, st.Missing = s.running, s.health, s.last, s.exit, s.missing
				return st, nil
			}
			n := h.net(t)
			err := n.Join(t.Context(), &sandbox.ContainerSpec{})
			if tt.condition == tasks.ConditionStarted {
				assert.Zero(t, asked, "started: no wait")
			} else {
				assert.Equal(t, len(tt.states), asked, "State until the condition is decided")
			}
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.NotNil(t, n.Service)
				assert.Equal(t, []string{"services", "agent"}, h.phases)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Equal(t, tt.failed, errors.Is(err, errServiceFailed))
			assert.Nil(t, n.Service, "main has no place when a service failed")
			assert.Equal(t, []string{"services"}, h.phases)
			h.cleanup(t)
			assert.Empty(t, h.fake.Live(), "the service started is removed all the same")
			assert.Equal(t, []string{testNet}, h.eng.removedNetworks)
		})
	}
}

// A service's dependency fails the dependent service itself, before it
// starts; an engine that cannot answer fails the wait with its error.
func TestComposeServiceWaitsForService(t *testing.T) {
	compose := `services:
  api:
    image: redis:7
    depends_on:
      db: {condition: service_healthy}
  db:
    image: redis:7
    healthcheck: {test: ["CMD", "true"]}
`
	t.Run("unhealthy", func(t *testing.T) {
		h := newHarness(t, writeTask(t, network{}, compose, nil))
		h.fake.Started = func(c *sandboxtest.Container) { c.Health = "unhealthy" }
		err := h.net(t).Join(t.Context(), &sandbox.ContainerSpec{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "api waits for db to be healthy")
		order, _ := serviceContainers(h.fake)
		assert.Equal(t, []string{"db"}, order, "api never starts")
	})
	t.Run("State fails", func(t *testing.T) {
		h := newHarness(t, writeTask(t, network{}, compose, nil))
		boom := errors.New("engine gone")
		h.fake.Fail = func(method, _ string) error {
			if method == "State" {
				return boom
			}
			return nil
		}
		err := h.net(t).Join(t.Context(), &sandbox.ContainerSpec{})
		require.ErrorIs(t, err, boom)
		assert.Contains(t, err.Error(), "api waits for db to be healthy")
		assert.False(t, errors.Is(err, errServiceFailed))
	})
}

// The wait ends with the trial's context.
func TestComposeWaitCancelled(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, dependsCompose(tasks.ConditionHealthy), nil))
	ctx, cancel := context.WithCancel(t.Context())
	h.fake.StateOf = func(_ *sandboxtest.Container, i int, st sandbox.State) (sandbox.State, error) {
		if i == 1 {
			cancel()
		}
		st.Health = "starting"
		return st, nil
	}
	err := h.net(t).Join(ctx, &sandbox.ContainerSpec{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "main waits for dep to be healthy")
}

// waitFor refuses a dependency that never started and a condition it
// does not know.
func TestWaitForRefuses(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, "", nil))
	n := h.net(t)
	c, err := h.fake.Start(t.Context(), sandbox.ContainerSpec{})
	require.NoError(t, err)
	ct := &composeTrial{containers: map[string]string{"db": c.ID}}
	err = n.waitFor(t.Context(), ct, "web", []tasks.ComposeDependency{{Service: "ghost", Condition: tasks.ConditionStarted}})
	require.Error(t, err)
	assert.Equal(t, "service web depends on ghost, which did not start", err.Error())
	err = n.waitFor(t.Context(), ct, "web", []tasks.ComposeDependency{{Service: "db", Condition: "service_bored"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown depends_on condition "service_bored"`)
}

// What fails in making a trial's services fails Join naming the object
// or the service; whatever was made is removed by the cleanups.
func TestComposeFailures(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		fail    func(method, id string) error
		wantErr string
		started int // containers made
		volumes int // volumes made
	}{
		{name: "network", fail: failOn("CreateNetwork", ""), wantErr: "the services' network: boom"},
		{name: "volume", fail: failOn("CreateVolume", ""), wantErr: "volume dbdata: boom"},
		{name: "image", fail: failOn("EnsureImage", ""), wantErr: "image of service db: boom", volumes: 2},
		{name: "start", fail: failOn("Start", ""), wantErr: "service db: boom", volumes: 2},
		// The container was made but did not start: it is removed all the same.
		{name: "created, not started", fail: failOn("Start", "c1"), wantErr: "service db: boom", started: 1, volumes: 2},
		{name: "second service", fail: failOn("Start", "c2"), wantErr: "service web: boom", started: 2, volumes: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, network{}, webCompose, webFiles))
			h.fake.Started = healthy
			h.fake.Fail = func(method, id string) error {
				if tt.fail(method, id) != nil {
					return boom
				}
				return nil
			}
			n := h.net(t)
			err := n.Join(t.Context(), &sandbox.ContainerSpec{})
			require.ErrorIs(t, err, boom)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Len(t, h.fake.Containers(), tt.started)
			h.fake.Fail = nil
			h.cleanup(t)
			assert.Empty(t, h.fake.Live(), "what was made is removed")
			assert.Len(t, h.eng.removedVolumes, tt.volumes, "each volume made is removed")
			if tt.name != "network" {
				assert.Equal(t, []string{testNet}, h.eng.removedNetworks, "the network made is removed")
			} else {
				assert.Empty(t, h.eng.removedNetworks, "no network was made")
			}
		})
	}
}

// failOn fails method (on the container id, "" for the call before one
// exists) the first time it is asked.
func failOn(method, id string) func(string, string) error {
	done := false
	return func(m, i string) error {
		if done || m != method || i != id {
			return nil
		}
		done = true
		return errors.New(method)
	}
}

// A service's image that is missing gets the offline base in its place
// where the substitution rule lets it, as the task's own image does:
// named by image: or as the base of its Dockerfile. The substitution is
// recorded in Mapped.
func TestServiceImageStandIn(t *testing.T) {
	tests := []struct {
		name    string
		compose string
		files   map[string]string
		missing string // the image the engine has not
		wantErr string // "" for none
	}{
		{name: "image", compose: "services:\n  cache:\n    image: python:3.12\n", missing: "python:3.12"},
		{name: "build", compose: "services:\n  cache:\n    build: ./cache\n", missing: "debian:bookworm",
			files: map[string]string{"environment/cache/Dockerfile": "FROM debian:bookworm\n"}},
		{name: "build with its own Dockerfile name", compose: "services:\n  cache:\n    build:\n      context: ./cache\n      dockerfile: Dockerfile.dev\n",
			missing: "ubuntu:24.04", files: map[string]string{"environment/cache/Dockerfile.dev": "FROM ubuntu:24.04\n"}},
		{name: "no stand-in for another stack", compose: "services:\n  cache:\n    image: node:20\n", missing: "node:20",
			wantErr: "image of service cache: svc/environment/docker-compose.yaml: services.cache.image: node:20 is not on this engine"},
		{name: "no stand-in for a base of another stack", compose: "services:\n  cache:\n    build: ./cache\n", missing: "node:20",
			files:   map[string]string{"environment/cache/Dockerfile": "FROM node:20\n"},
			wantErr: "image of service cache: svc/environment/cache/Dockerfile:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, network{}, tt.compose, tt.files))
			h.fake.Inspect = func(ref string) (sandbox.ImageInfo, error) {
				if ref == tt.missing {
					return sandbox.ImageInfo{}, sandbox.ErrNoSuchImage
				}
				return sandbox.ImageInfo{ID: "sha256:" + ref}, nil
			}
			var maps []map[string]string
			h.fake.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
				maps = append(maps, spec.ImageMap)
				if spec.ImageMap[tt.missing] != images.Fallback {
					return sandbox.Image{}, fmt.Errorf("%s %w", tt.missing, sandbox.ErrImageMissing)
				}
				return sandbox.Image{Ref: "img/cache", Mapped: []string{tt.missing + "=" + images.Fallback}}, nil
			}
			n := h.net(t)
			err := n.Join(t.Context(), &sandbox.ContainerSpec{})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				var d *images.Defect
				assert.ErrorAs(t, err, &d, "the task's defect")
				assert.Len(t, maps, 1, "no second try")
				assert.Empty(t, n.Mapped)
				return
			}
			require.NoError(t, err)
			require.Len(t, maps, 2, "built again with the stand-in mapped")
			assert.Equal(t, []string{tt.missing + "=" + images.Fallback}, n.Mapped)
			assert.Equal(t, []string{"img/cache"}, h.touched)
			require.Len(t, h.reports, 1)
			assert.Contains(t, h.reports[0], tt.missing+" is not present")
			_, by := serviceContainers(h.fake)
			assert.Equal(t, "img/cache", by["cache"].Spec.Image)
		})
	}
}

// Without the offline base the stand-in fails as the machine's setup.
func TestServiceImageNoFallback(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, "services:\n  cache:\n    image: python:3.12\n", nil))
	h.fake.Inspect = func(string) (sandbox.ImageInfo, error) { return sandbox.ImageInfo{}, sandbox.ErrNoSuchImage }
	h.fake.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
		return sandbox.Image{}, fmt.Errorf("%s %w", spec.DockerImage, sandbox.ErrImageMissing)
	}
	err := h.net(t).Join(t.Context(), &sandbox.ContainerSpec{})
	require.ErrorIs(t, err, images.ErrNoStandIn)
	assert.Contains(t, err.Error(), "image of service cache")
}

// An image present under its own name is used as it is: nothing is
// mapped and no stand-in is looked for.
func TestServiceImagePresent(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, "services:\n  cache:\n    image: redis:7\n", nil))
	n := h.net(t)
	require.NoError(t, n.Join(t.Context(), &sandbox.ContainerSpec{}))
	assert.Empty(t, n.Mapped)
	assert.NotContains(t, h.fake.Calls(), "InspectImage")
	assert.Equal(t, []string{"flightdeck/svc-cache:fake"}, h.touched)
}

func TestServiceBuildSpec(t *testing.T) {
	task := &tasks.Task{ID: "shop"}
	timeout := 90.0
	task.Config.Environment.BuildTimeoutSec = &timeout
	tests := []struct {
		name string
		svc  tasks.ComposeService
		mult suite.Multipliers
		want sandbox.BuildSpec
	}{
		{name: "image", svc: tasks.ComposeService{Name: "db", Image: "postgres:16"},
			want: sandbox.BuildSpec{Name: "shop-db", DockerImage: "postgres:16", Timeout: 90 * time.Second, LogPath: "L", ImageMap: map[string]string{"a": "b"}}},
		{name: "build", mult: suite.Multipliers{Build: 3},
			svc: tasks.ComposeService{Name: "web", Build: &tasks.ComposeBuild{Context: "/t/web", Dockerfile: "D", Args: map[string]string{"K": "V"}, Target: "T"}},
			want: sandbox.BuildSpec{Name: "shop-web", ContextDir: "/t/web", Dockerfile: "D", Args: map[string]string{"K": "V"}, Target: "T",
				Timeout: 270 * time.Second, LogPath: "L", ImageMap: map[string]string{"a": "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ServiceBuildSpec(task, tt.svc, map[string]string{"a": "b"}, tt.mult, "L"))
		})
	}
}

func TestMounts(t *testing.T) {
	ct := &composeTrial{volumes: map[string]string{"data": "vol-data"}}
	trialDir := t.TempDir()
	vols, binds, err := ct.mounts(tasks.ComposeService{Volumes: []tasks.ComposeVolume{
		{Volume: "data", Target: "/data", ReadOnly: true},
		{HostPath: "/task/conf", Target: "/etc/conf"},
		{Volume: "data", Target: "/rw"},
		{TrialLogs: "ARTIFACTS", Target: "/logs/artifacts"},
	}}, trialDir)
	require.NoError(t, err)
	assert.Equal(t, []sandbox.VolumeMount{{Volume: "vol-data", Target: "/data", ReadOnly: true}, {Volume: "vol-data", Target: "/rw"}}, vols)
	assert.Equal(t, []sandbox.Mount{{HostPath: "/task/conf", ContainerPath: "/etc/conf", ReadOnly: true},
		{HostPath: filepath.Join(trialDir, "logs", "artifacts"), ContainerPath: "/logs/artifacts"}}, binds,
		"a bind of the task's is read-only, whatever the file says; the trial's artifacts dir is main's")
	st, err := os.Stat(filepath.Join(trialDir, "logs", "artifacts"))
	require.NoError(t, err, "the artifacts dir is made before the service starts")
	assert.Equal(t, os.FileMode(0o777), st.Mode().Perm())
	vols, binds, err = ct.mounts(tasks.ComposeService{}, trialDir)
	require.NoError(t, err)
	assert.Nil(t, vols)
	assert.Nil(t, binds)
}

// The services' output is kept under the trial's dir even when its
// services/ was never made.
func TestServiceLog(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, "", nil))
	n := h.net(t)
	p := n.serviceLog("db")
	assert.Equal(t, filepath.Join(h.trial.Dir, ServicesDir, "db.log"), p)
	assert.DirExists(t, filepath.Dir(p))
	assert.NoFileExists(t, p, "only the dir is made")
}
