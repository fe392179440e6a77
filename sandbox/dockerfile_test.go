package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var planDockerfileBaseMap = map[string]string{"python:3.12-slim": "flightdeck/base:bookworm", "busybox": "flightdeck/base:bookworm"}

var planDockerfileCases = []struct {
	name       string
	dockerfile string
	imageMap   map[string]string
	buildArgs  map[string]string
	bases      []string
	mapped     []string
	buildkit   []string
	content    string // expected content when it changes
	syntax     string
}{
	{
		name:       "plain",
		dockerfile: "FROM flightdeck/base:bookworm\nRUN true\n",
		bases:      []string{"flightdeck/base:bookworm"},
	},
	{
		name:       "mapped FROM keeps flags and stage name",
		dockerfile: "FROM --platform=linux/amd64 python:3.12-slim AS build\nRUN true\nFROM build\n",
		imageMap:   planDockerfileBaseMap,
		bases:      []string{"flightdeck/base:bookworm"},
		mapped:     []string{"python:3.12-slim=flightdeck/base:bookworm"},
		content:    "FROM --platform=linux/amd64 flightdeck/base:bookworm AS build\nRUN true\nFROM build\n",
	},
	{
		name:       "normalized reference matches",
		dockerfile: "FROM " + hub + "/library/python:3.12-slim\n",
		imageMap:   planDockerfileBaseMap,
		bases:      []string{"flightdeck/base:bookworm"},
		mapped:     []string{hub + "/library/python:3.12-slim=flightdeck/base:bookworm"},
		content:    "FROM flightdeck/base:bookworm\n",
	},
	{
		name:       "meta ARG expands",
		dockerfile: "ARG PY=3.12-slim\nFROM python:${PY}\n",
		imageMap:   planDockerfileBaseMap,
		bases:      []string{"flightdeck/base:bookworm"},
		mapped:     []string{"python:3.12-slim=flightdeck/base:bookworm"},
		content:    "ARG PY=3.12-slim\nFROM flightdeck/base:bookworm\n",
	},
	{
		name:       "unknown ARG is left to the builder",
		dockerfile: "ARG TAG\nFROM python:${TAG}\n",
		imageMap:   planDockerfileBaseMap,
	},
	{
		name:       "scratch and stages are not images",
		dockerfile: "FROM scratch AS empty\nFROM Empty\nCOPY --from=empty / /\nCOPY --from=0 / /\n",
	},
	{
		name:       "COPY --from an image is mapped",
		dockerfile: "FROM scratch\nCOPY --from=busybox /bin/sh /sh\n",
		imageMap:   planDockerfileBaseMap,
		bases:      []string{"flightdeck/base:bookworm"},
		mapped:     []string{"busybox=flightdeck/base:bookworm"},
		content:    "FROM scratch\nCOPY --from=flightdeck/base:bookworm /bin/sh /sh\n",
	},
	{
		name:       "BuildKit features",
		dockerfile: "FROM flightdeck/base:bookworm\nRUN --mount=type=cache,target=/c true\nCOPY --chmod=755 a /a\nADD --link b /b\nRUN <<EOT\necho hi\nEOT\n",
		bases:      []string{"flightdeck/base:bookworm"},
		buildkit:   []string{"line 2: RUN --mount", "line 3: COPY --chmod", "line 4: ADD --link", "line 5: RUN heredoc"},
	},
	{
		name:       "syntax directive is dropped",
		dockerfile: "# syntax=docker/dockerfile:1\nFROM flightdeck/base:bookworm\n",
		bases:      []string{"flightdeck/base:bookworm"},
		syntax:     "docker/dockerfile:1",
		content:    "#\nFROM flightdeck/base:bookworm\n",
	},
	{
		name:       "a build arg sets a global ARG over its default",
		dockerfile: "ARG BASE=python:3.12-slim\nFROM ${BASE}\n",
		imageMap:   planDockerfileBaseMap,
		buildArgs:  map[string]string{"BASE": "busybox"},
		bases:      []string{"flightdeck/base:bookworm"},
		mapped:     []string{"busybox=flightdeck/base:bookworm"},
		content:    "ARG BASE=python:3.12-slim\nFROM flightdeck/base:bookworm\n",
	},
	{
		name:       "a build arg gives a global ARG without a default its value",
		dockerfile: "ARG BASE\nFROM $BASE\n",
		buildArgs:  map[string]string{"BASE": "flightdeck/base:bookworm"},
		bases:      []string{"flightdeck/base:bookworm"},
	},
	{
		name:       "bases listed once",
		dockerfile: "FROM python:3.12-slim\nFROM flightdeck/base:bookworm\n",
		imageMap:   planDockerfileBaseMap,
		bases:      []string{"flightdeck/base:bookworm"},
		mapped:     []string{"python:3.12-slim=flightdeck/base:bookworm"},
		content:    "FROM flightdeck/base:bookworm\nFROM flightdeck/base:bookworm\n",
	},
}

func TestPlanDockerfile(t *testing.T) {
	for _, tc := range planDockerfileCases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := planDockerfile([]byte(tc.dockerfile), tc.imageMap, tc.buildArgs)
			require.NoError(t, err)
			assert.Equal(t, tc.bases, plan.Bases)
			assert.Equal(t, tc.mapped, plan.Mapped)
			assert.Equal(t, tc.buildkit, plan.BuildKit)
			assert.Equal(t, tc.syntax, plan.Syntax)
			want := tc.content
			if want == "" {
				want = tc.dockerfile
			}
			assert.Equal(t, want, string(plan.Content))
		})
	}
}

func TestPlanDockerfileRefuses(t *testing.T) {
	tests := []struct {
		name, dockerfile, want string
	}{
		{"secret mount", "FROM scratch\nRUN --mount=type=secret,id=x true\n", "line 2: RUN --mount=type=secret needs a client session"},
		{"ssh mount", "FROM scratch\nRUN --mount=type=ssh true\n", "type=ssh"},
		{"no FROM", "RUN true\n", "no FROM"},
		{"parse error", "FROM scratch\nRUN <<EOT\n", "unterminated heredoc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := planDockerfile([]byte(tc.dockerfile), nil, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrDockerfile)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

var dockerfileBasesCases = []struct {
	name       string
	dockerfile string
	bases      []string
}{
	{
		name:       "global ARG default",
		dockerfile: "ARG BASE=python:3.12-slim\nFROM ${BASE}\nWORKDIR /app\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "$VAR",
		dockerfile: "ARG BASE=python:3.12-slim\nFROM $BASE\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "part of a reference",
		dockerfile: "ARG PY=3.12\nFROM python:${PY}-slim\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "a default made of an earlier ARG",
		dockerfile: "ARG PY=3.12\nARG BASE=python:${PY}-slim\nFROM ${BASE}\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "a quoted default",
		dockerfile: "ARG BASE=\"python:3.12-slim\"\nFROM ${BASE}\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "${VAR:-default}, VAR not declared",
		dockerfile: "FROM ${BASE:-python:3.12-slim}\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "${VAR:-default}, VAR declared without a default",
		dockerfile: "ARG BASE\nFROM ${BASE:-python:3.12-slim}\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "${VAR:-default}, VAR with a default",
		dockerfile: "ARG BASE=ubuntu:24.04\nFROM ${BASE:-python:3.12-slim}\n",
		bases:      []string{"ubuntu:24.04"},
	},
	{
		name:       "a redeclaration without a default is the builder's to read",
		dockerfile: "ARG BASE=python:3.12-slim\nARG BASE\nFROM ${BASE}\n",
	},
	{
		name:       "a declaration without a default leaves the ARG unset",
		dockerfile: "ARG TAG\nFROM python:3.12${TAG}\n",
		bases:      []string{"python:3.12"},
	},
	{
		name:       "--platform and a continuation line",
		dockerfile: "FROM --platform=$BUILDPLATFORM \\\n    golang:1.22 AS build\nFROM --platform=linux/amd64 python:3.12-slim\n",
		bases:      []string{"golang:1.22", "python:3.12-slim"},
	},
	{
		name:       "multi-stage with stage references",
		dockerfile: "FROM golang:1.22 AS Build\nRUN go build -o /x .\nFROM build AS test\nFROM python:3.12-slim\nCOPY --from=build /x /x\n",
		bases:      []string{"golang:1.22", "python:3.12-slim"},
	},
	{
		name:       "a stage named by an ARG",
		dockerfile: "ARG FROM_STAGE=build\nFROM golang:1.22 AS build\nFROM ${FROM_STAGE}\n",
		bases:      []string{"golang:1.22"},
	},
	{
		name:       "a stage name used before the stage is an image",
		dockerfile: "FROM build\nFROM golang:1.22 AS build\n",
		bases:      []string{"build", "golang:1.22"},
	},
	{
		name:       "scratch",
		dockerfile: "FROM scratch\nCOPY app /app\n",
	},
	{
		name:       "scratch from an ARG",
		dockerfile: "ARG BASE=scratch\nFROM ${BASE}\n",
	},
	{
		name:       "an ARG redefined inside a stage does not reach FROM",
		dockerfile: "ARG BASE=python:3.12-slim\nFROM ${BASE} AS one\nARG BASE=ubuntu:24.04\nFROM ${BASE}\n",
		bases:      []string{"python:3.12-slim"},
	},
	{
		name:       "an ARG after the first FROM is not global",
		dockerfile: "FROM ubuntu:24.04\nARG BASE=python:3.12-slim\nFROM ${BASE:-golang:1.22}\n",
		bases:      []string{"ubuntu:24.04", "golang:1.22"},
	},
	{
		name:       "duplicate bases listed once, in first use order",
		dockerfile: "FROM python:3.12-slim AS a\nFROM ubuntu:24.04 AS b\nFROM python:3.12-slim\nARG X\nFROM ubuntu:24.04\n",
		bases:      []string{"python:3.12-slim", "ubuntu:24.04"},
	},
	{
		name:       "images named by COPY --from and RUN --mount=from",
		dockerfile: "FROM python:3.12-slim\nCOPY --from=busybox:1.36 /bin/sh /sh\nRUN --mount=from=golang:1.22,target=/go true\n",
		bases:      []string{"python:3.12-slim", "busybox:1.36", "golang:1.22"},
	},
	{
		name:       "an ARG without a default is unknown before the build",
		dockerfile: "ARG TAG\nFROM python:${TAG}\nFROM ${UNDECLARED}\n",
	},
	{
		name:       "the builder's platform ARGs are unknown before the build",
		dockerfile: "ARG ARCH=${TARGETARCH}\nFROM golang:1.22-${TARGETARCH}\nFROM ${TARGETOS}/python\nFROM golang:${ARCH}\n",
	},
}

func TestDockerfileBases(t *testing.T) {
	for _, tc := range dockerfileBasesCases {
		t.Run(tc.name, func(t *testing.T) {
			bases, err := DockerfileBases([]byte(tc.dockerfile))
			require.NoError(t, err)
			assert.Equal(t, tc.bases, bases)
		})
	}
}

func TestDockerfileBasesRefuses(t *testing.T) {
	for _, dockerfile := range []string{"RUN true\n", "FROM scratch\nRUN --mount=type=secret,id=x true\n"} {
		_, err := DockerfileBases([]byte(dockerfile))
		assert.ErrorIs(t, err, ErrDockerfile, dockerfile)
	}
}

// FuzzDockerfileBases checks that DockerfileBases lists every image the
// build reads: with each of them mapped, the build reads mapped images
// only.
func FuzzDockerfileBases(f *testing.F) {
	f.Add("ARG BASE=python:3.12-slim\nFROM ${BASE}\n")
	f.Add("ARG A=3 B=x:${A}\nFROM ${B:-y} AS s\nFROM s\nCOPY --from=${A} / /\n")
	f.Add("FROM --platform=$BUILDPLATFORM a:${TARGETARCH:-amd64}\nRUN --mount=from=b,target=/b true\n")
	const to = "flightdeck/base:bookworm"
	f.Fuzz(func(t *testing.T, dockerfile string) {
		bases, err := DockerfileBases([]byte(dockerfile))
		if err != nil {
			return
		}
		m := map[string]string{}
		for _, b := range bases {
			m[b] = to
		}
		plan, err := planDockerfile([]byte(dockerfile), m, nil)
		require.NoError(t, err)
		for _, b := range plan.Bases {
			if b != to {
				t.Fatalf("the build reads %q, which DockerfileBases (%q) does not list", b, bases)
			}
		}
	})
}

func FuzzPlanDockerfile(f *testing.F) {
	f.Add("FROM python:3.12 AS a\nCOPY --from=busybox / /\nRUN --mount=type=bind,from=a,target=/x true\n")
	f.Add("# syntax=x\r\nARG A=b\r\nFROM ${A}\r\n")
	f.Add("FROM a \\\n  AS b\nRUN <<EOT\nx\nEOT\n")
	m := map[string]string{"python:3.12": "flightdeck/base:bookworm", "busybox": "flightdeck/base:bookworm", "b": "c"}
	f.Fuzz(func(t *testing.T, dockerfile string) {
		plan, err := planDockerfile([]byte(dockerfile), m, nil)
		if err != nil {
			return
		}
		// A rewritten Dockerfile has as many lines and parses again.
		if got, want := strings.Count(string(plan.Content), "\n"), strings.Count(dockerfile, "\n"); got != want {
			t.Fatalf("rewritten Dockerfile has %d lines, the original %d", got, want)
		}
		if _, err := planDockerfile(plan.Content, nil, nil); err != nil && len(plan.Mapped) > 0 {
			t.Fatalf("rewritten Dockerfile does not parse: %v\n%s", err, plan.Content)
		}
	})
}

// An instruction no builder knows is the Dockerfile's error, with its
// line, before any engine is asked (which would refuse it as a bad request).
func TestDockerfileUnknownInstruction(t *testing.T) {
	_, err := DockerfileBases([]byte("FROM flightdeck/base:bookworm\nWORKDIR /app\nRUNN echo hi\n"))
	require.ErrorIs(t, err, ErrDockerfile)
	assert.Contains(t, err.Error(), "line 3: unknown instruction RUNN")
	_, err = DockerfileInstructions([]byte("FROM x\nCOPPY a b\n"))
	require.ErrorIs(t, err, ErrDockerfile)
	_, err = DockerfileBases([]byte("from x\nrun true\nhealthcheck NONE\nonbuild RUN true\n"))
	assert.NoError(t, err, "every known instruction, in any case")
}
