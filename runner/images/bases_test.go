package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// dockerfileCase is a Dockerfile and the base images it names. The engine
// can build every one with the image map of agreeingImageMap.
type dockerfileCase struct {
	name       string
	dockerfile string
	bases      []string
}

func dockerfileCases() []dockerfileCase {
	return []dockerfileCase{
		{"global ARG default", "ARG BASE=python:3.12-slim\nFROM ${BASE}\nWORKDIR /app\n", []string{"python:3.12-slim"}},
		{"${VAR:-default} and $VAR", "ARG TOOLS=ubuntu:24.04\nFROM ${BASE:-python:3.12-slim} AS one\nFROM $TOOLS\n",
			[]string{"python:3.12-slim", "ubuntu:24.04"}},
		// The host's platform: the offline base image is built for it.
		{"--platform", "ARG GO=golang:1.22\nFROM --platform=linux/" + runtime.GOARCH + " ${GO}\n", []string{"golang:1.22"}},
		{"multi-stage with a stage reference",
			"FROM golang:1.22 AS build\nFROM build AS test\nFROM python:3.12-slim\nCOPY --from=build /etc/debian_version /x\n",
			[]string{"golang:1.22", "python:3.12-slim"}},
		{"scratch", "FROM scratch AS empty\nFROM ubuntu:24.04\n", []string{"ubuntu:24.04"}},
		{"an ARG redefined inside a stage does not reach FROM",
			"ARG BASE=python:3.12-slim\nFROM ${BASE} AS one\nARG BASE=ubuntu:24.04\nFROM ${BASE}\n", []string{"python:3.12-slim"}},
		{"duplicate bases", "FROM python:3.12-slim AS a\nFROM ubuntu:24.04 AS b\nFROM python:3.12-slim\n",
			[]string{"python:3.12-slim", "ubuntu:24.04"}},
		{"an image named by COPY --from", "FROM python:3.12-slim\nCOPY --from=busybox:1.36 /etc/debian_version /x\n",
			[]string{"python:3.12-slim", "busybox:1.36"}},
	}
}

// agreeingImageMap maps every image dockerfileCases names to the offline
// base image.
func agreeingImageMap() map[string]string {
	m := map[string]string{}
	for _, ref := range []string{"python:3.12-slim", "ubuntu:24.04", "golang:1.22", "busybox:1.36"} {
		m[ref] = Fallback
	}
	return m
}

// dockerfileTask writes a task whose environment is the Dockerfile.
func dockerfileTask(t *testing.T, dockerfile string) *tasks.Task {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "environment"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte(dockerfile), 0o644))
	return &tasks.Task{ID: "bases", Dir: dir}
}

func TestBaseImages(t *testing.T) {
	cases := append(dockerfileCases(), dockerfileCase{"syntax line, continuation, lower-case from, an unknown ARG", `# syntax=docker/dockerfile:1
FROM --platform=linux/amd64 golang:1.22 AS build
RUN go build \
    -o /x .
FROM build AS test
FROM python:3.12-slim
COPY --from=build /x /x
FROM scratch
FROM ${BASE}
from python:3.12-slim
`, []string{"golang:1.22", "python:3.12-slim"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bases, err := Bases(dockerfileTask(t, tc.dockerfile))
			require.NoError(t, err)
			assert.Equal(t, tc.bases, bases)
		})
	}

	t.Run("docker_image wins over the Dockerfile", func(t *testing.T) {
		task := dockerfileTask(t, "FROM ubuntu:24.04\n")
		task.Config.Environment.DockerImage = "python:3.12-slim"
		bases, err := Bases(task)
		require.NoError(t, err)
		assert.Equal(t, []string{"python:3.12-slim"}, bases)
	})
	t.Run("a Dockerfile the build refuses names the file", func(t *testing.T) {
		task := dockerfileTask(t, "RUN true\n")
		_, err := Bases(task)
		require.Error(t, err)
		assert.ErrorIs(t, err, sandbox.ErrDockerfile)
		assert.Contains(t, err.Error(), task.Path("environment", "Dockerfile")+": ")
	})
	t.Run("a missing Dockerfile names the file", func(t *testing.T) {
		task := &tasks.Task{ID: "bases", Dir: t.TempDir()}
		_, err := Bases(task)
		require.Error(t, err)
		assert.Contains(t, err.Error(), task.Path("environment", "Dockerfile"))
	})
}

// BaseImages and the build read a Dockerfile alike: with an image map
// covering what the Dockerfiles name, the substitutions the build makes are
// the map's entries for BaseImages' list, the part of the map the cache key
// holds (Relevant).
func TestEngineBaseImagesAgreeWithBuild(t *testing.T) {
	t.Parallel()
	eng := testenv.Engine(t)
	m := agreeingImageMap()
	for _, tc := range dockerfileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			task := dockerfileTask(t, tc.dockerfile)
			bases, err := Bases(task)
			require.NoError(t, err)
			log := filepath.Join(t.TempDir(), "build.log")
			img, err := eng.EnsureImage(t.Context(), sandbox.BuildSpec{
				Name: "bases-agree", ContextDir: task.Path("environment"), ImageMap: m,
				Timeout: 5 * time.Minute, LogPath: log,
			})
			if err != nil {
				out, _ := os.ReadFile(log)
				t.Fatalf("build: %v\n%s", err, out)
			}
			if img.Built {
				t.Cleanup(func() { eng.RemoveImage(context.Background(), img.Ref) })
			}
			mapped := slices.Compact(slices.Sorted(slices.Values(img.Mapped)))
			assert.Equal(t, Relevant(bases, m), mapped)
		})
	}
}

// heldEngine holds back the answers of the EnsureImage calls whose map
// has no entry for python:3.12-slim: the first until every task has made
// one (arrived), the others until release is closed. So every task tries
// the map from before the stand-in, and all but the first learn that it
// failed only once the first task's build decided the stand-in: the
// interleaving that failed them.
type heldEngine struct {
	sandbox.Engine
	arrived      sync.WaitGroup
	all, release chan struct{}
	held         atomic.Int32
}

func (e *heldEngine) EnsureImage(ctx context.Context, spec sandbox.BuildSpec) (sandbox.Image, error) {
	if _, mapped := spec.ImageMap["python:3.12-slim"]; mapped {
		return e.Engine.EnsureImage(ctx, spec)
	}
	img, err := e.Engine.EnsureImage(ctx, spec)
	n := e.held.Add(1)
	e.arrived.Done()
	if n == 1 {
		<-e.all
	} else {
		<-e.release
	}
	return img, err
}

// Several new tasks on the same official base, built at once, all get the
// stand-in, reported once: a build that failed with the map from before
// another task's stand-in tries again with the run's map.
func TestStandInForTasksBuiltAtOnce(t *testing.T) {
	eng := testenv.Engine(t)
	const n = 3
	held := &heldEngine{Engine: eng, all: make(chan struct{}), release: make(chan struct{})}
	held.arrived.Add(n)
	go func() { held.arrived.Wait(); close(held.all) }()
	var reports []string
	var mu sync.Mutex
	set := New(held, nil, t.TempDir(), 1, func(l string) { mu.Lock(); reports = append(reports, l); mu.Unlock() })
	nonce := time.Now().UnixNano()
	type got struct {
		i   int
		img sandbox.Image
		err error
	}
	results := make(chan got, n)
	for i := range n {
		task := dockerfileTask(t, fmt.Sprintf("FROM python:3.12-slim\nRUN echo %d-%d > /task\n", nonce, i))
		task.ID = fmt.Sprintf("standin-%d", i)
		go func() {
			img, _, err := set.Get(t.Context(), task)
			results <- got{i, img, err}
		}()
	}
	for k := range n {
		var r got
		select {
		case r = <-results:
		case <-time.After(5 * time.Minute):
			t.Fatalf("%d of %d tasks have their image after 5m", k, n)
		}
		if k == 0 {
			close(held.release)
		}
		require.NoError(t, r.err, "task %d", r.i)
		assert.Equal(t, []string{"python:3.12-slim=" + Fallback}, r.img.Mapped, "task %d", r.i)
		if r.img.Built {
			t.Cleanup(func() { eng.RemoveImage(context.Background(), r.img.Ref) })
		}
	}
	assert.Equal(t, int32(n), held.held.Load(), "every task tried the map without the stand-in first")
	assert.Len(t, reports, 1, "the substitution is reported once: %q", reports)
}
