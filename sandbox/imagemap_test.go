package sandbox

import (
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseImageMap(t *testing.T) {
	m, err := ParseImageMap(" python:3.12-slim=flightdeck/base:bookworm, ,node:20=flightdeck/base:bookworm ")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"python:3.12-slim": "flightdeck/base:bookworm",
		"node:20":          "flightdeck/base:bookworm",
	}, m)

	for _, bad := range []string{"python", "=x", "x=", "UPPER:1=x", "a=b=c"} {
		_, err := ParseImageMap(bad)
		assert.Error(t, err, bad)
	}
}

func TestMapImage(t *testing.T) {
	digest := strings.Repeat("a", 64)
	other := strings.Repeat("b", 64)
	m := map[string]string{"python:3.12": "local/py", "ubuntu": "local/ubuntu",
		"pinned:1@sha256:" + digest: "local/pinned", "pinned:1": "local/pinned-any"}
	tests := []struct {
		ref, want string
		ok        bool
	}{
		{"python:3.12", "local/py", true},
		{hub + "/library/python:3.12", "local/py", true},
		{"library/python:3.12", "local/py", true},
		{"python:3.11", "python:3.11", false},
		{"ubuntu:latest", "local/ubuntu", true},
		{"ubuntu:22.04", "ubuntu:22.04", false},
		{"not a ref", "not a ref", false},
		{"python:3.12@sha256:" + digest, "local/py", true},
		{hub + "/library/python:3.12@sha256:" + digest, "local/py", true},
		{"python:3.11@sha256:" + digest, "python:3.11@sha256:" + digest, false},
		{"ubuntu@sha256:" + digest, "local/ubuntu", true},
		{"pinned:1@sha256:" + digest, "local/pinned", true},
		{"pinned:1@sha256:" + other, "local/pinned-any", true},
		{"python:3.12@sha256:short", "python:3.12@sha256:short", false},
	}
	for _, tc := range tests {
		got, ok := MapImage(tc.ref, m)
		assert.Equal(t, tc.want, got, tc.ref)
		assert.Equal(t, tc.ok, ok, tc.ref)
	}
}

func FuzzParseImageMap(f *testing.F) {
	f.Add("python:3.12-slim=flightdeck/base:bookworm,node:20=x")
	f.Add("a=b,,c=d@sha256:0000000000000000000000000000000000000000000000000000000000000000")
	f.Add("python:3.12-slim@sha256:0000000000000000000000000000000000000000000000000000000000000000=x")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseImageMap(s)
		if err != nil {
			return
		}
		for from, to := range m {
			if got, ok := MapImage(from, m); !ok || got != to {
				t.Fatalf("MapImage(%q) = %q, %v; want %q", from, got, ok, to)
			}
		}
	})
}

// hub is the default registry's domain, the long form of a short reference.
var hub = defaultDomain()

func defaultDomain() string {
	n, err := reference.ParseNormalizedNamed("python")
	if err != nil {
		panic(err)
	}
	return reference.Domain(n)
}

func TestIsOfficialImage(t *testing.T) {
	for ref, want := range map[string]bool{
		"python:3.12-slim":               true,
		"debian":                         true,
		"ubuntu:24.04":                   true,
		"docker.io/library/ubuntu:24.04": true,
		"library/python:3.12":            true,
		"python:3.12-slim@sha256:" + strings.Repeat("a", 64): true,
		"ghcr.io/nosuchorg/nosuchimage:1.0":                  false,
		"nosuchorg/nosuchimage:1.0":                          false,
		"docker.io/nosuchorg/img":                            false,
		"localhost:5000/python:3.12":                         false,
		"quay.io/library/python":                             false,
		"flightdeck/base:bookworm":                           false,
		"Not A Reference":                                    false,
		"":                                                   false,
	} {
		assert.Equal(t, want, IsOfficialImage(ref), ref)
	}
}

func TestOfficialImageNameAndTag(t *testing.T) {
	for ref, want := range map[string][2]string{
		"python:3.12-slim": {"python", "3.12-slim"}, "docker.io/library/ubuntu:24.04": {"ubuntu", "24.04"},
		"debian": {"debian", ""}, "python@sha256:" + strings.Repeat("a", 64): {"python", ""},
	} {
		name, tag, ok := OfficialImage(ref)
		assert.True(t, ok, ref)
		assert.Equal(t, want, [2]string{name, tag}, ref)
	}
	_, _, ok := OfficialImage("ghcr.io/org/img:1")
	assert.False(t, ok)
}
