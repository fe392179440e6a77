package sandbox

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestClassicBuildFailureQuotesFailingStep(t *testing.T) {
	stream := `{"stream":"Step 1/3 : FROM flightdeck/base:bookworm\n"}
{"stream":" ---\u003e 6d062593d21a\n"}
{"stream":"Step 2/3 : RUN echo one \u0026\u0026 echo two \u0026\u0026 exit 3\n"}
{"stream":" ---\u003e Running in 0123456789ab\n"}
{"stream":"one\n"}
{"stream":"two\n"}
{"errorDetail":{"code":3,"message":"The command '/bin/sh -c echo one \u0026\u0026 echo two \u0026\u0026 exit 3' returned a non-zero code: 3"},"error":"The command ..."}
`
	var log strings.Builder
	p := newBuildProgress(&log)
	require.NoError(t, p.read(strings.NewReader(stream)))
	require.NotEmpty(t, p.errMsg)
	be := p.failure("flightdeck/x:0123", "/tmp/build.log")
	assert.Equal(t, "RUN echo one && echo two && exit 3", be.Step)
	assert.Equal(t, []string{"one", "two"}, be.Tail)
	assert.True(t, errors.Is(be, ErrBuildFailed))
	assert.Equal(t, `build flightdeck/x:0123: step "RUN echo one && echo two && exit 3" failed (exit 3): two; build log: /tmp/build.log`, be.Error(),
		"one line: the step, its exit code, its last word and the whole log's path")
	assert.Contains(t, log.String(), "Step 2/3")
	assert.Empty(t, p.lastLayer, "FROM made no layer")
}

func TestClassicBuildNotesItsLastLayer(t *testing.T) {
	stream := `{"stream":"Step 1/4 : FROM flightdeck/base:bookworm\n"}
{"stream":" ---\u003e 6d062593d21a\n"}
{"stream":"Step 2/4 : RUN echo cached\n"}
{"stream":" ---\u003e Using cache\n"}
{"stream":" ---\u003e 111111111111\n"}
{"stream":"Step 3/4 : COPY a /a\n"}
{"stream":" ---\u003e 22222222222a\n"}
{"stream":"Step 4/4 : RUN exit 1\n"}
{"stream":" ---\u003e Running in 333333333333\n"}
{"errorDetail":{"message":"returned a non-zero code: 1"}}
`
	p := newBuildProgress(&strings.Builder{})
	require.NoError(t, p.read(strings.NewReader(stream)))
	assert.Equal(t, "22222222222a", p.lastLayer)
}

// encodeStatus builds a StatusResponse the way BuildKit encodes it.
func encodeStatus(vertexes [][3]string, logs [][2]string) []byte {
	var b []byte
	for _, v := range vertexes { // digest, name, error
		var vb []byte
		vb = protowire.AppendTag(vb, 1, protowire.BytesType)
		vb = protowire.AppendString(vb, v[0])
		vb = protowire.AppendTag(vb, 3, protowire.BytesType)
		vb = protowire.AppendString(vb, v[1])
		vb = protowire.AppendTag(vb, 5, protowire.BytesType) // started
		vb = protowire.AppendBytes(vb, []byte{8, 1})
		if v[2] != "" {
			vb = protowire.AppendTag(vb, 7, protowire.BytesType)
			vb = protowire.AppendString(vb, v[2])
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, vb)
	}
	for _, l := range logs { // vertex, msg
		var lb []byte
		lb = protowire.AppendTag(lb, 1, protowire.BytesType)
		lb = protowire.AppendString(lb, l[0])
		lb = protowire.AppendTag(lb, 3, protowire.VarintType)
		lb = protowire.AppendVarint(lb, 1)
		lb = protowire.AppendTag(lb, 4, protowire.BytesType)
		lb = protowire.AppendBytes(lb, []byte(l[1]))
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, lb)
	}
	return b
}

func traceMessage(b []byte) string {
	return `{"id":"moby.buildkit.trace","aux":"` + base64.StdEncoding.EncodeToString(b) + `"}` + "\n"
}

func TestBuildKitFailureQuotesFailingVertex(t *testing.T) {
	stream := traceMessage(encodeStatus([][3]string{{"sha256:a", "[1/3] FROM flightdeck/base:bookworm", ""}, {"sha256:b", "[2/3] RUN make", ""}}, nil)) +
		traceMessage(encodeStatus(nil, [][2]string{{"sha256:b", "compiling\nerror: boom\n"}})) +
		traceMessage(encodeStatus([][3]string{{"sha256:c", "[3/3] COPY x /x", "context canceled"}, {"sha256:b", "[2/3] RUN make", "exit code: 2"}}, nil)) +
		`{"errorDetail":{"message":"failed to solve: exit code: 2"},"error":"failed to solve: exit code: 2"}` + "\n"
	var log strings.Builder
	p := newBuildProgress(&log)
	require.NoError(t, p.read(strings.NewReader(stream)))
	be := p.failure("flightdeck/x:1", "")
	assert.Equal(t, "[2/3] RUN make", be.Step)
	assert.Equal(t, []string{"compiling", "error: boom"}, be.Tail)
	assert.Contains(t, log.String(), "#2 [2/3] RUN make")
	assert.Contains(t, log.String(), "#2 error: boom")
}

func TestClassicBuildLogIsText(t *testing.T) {
	// The classic builder wraps a step's stderr in red; a sequence may
	// also be cut between two messages.
	stream := `{"stream":"Step 1/2 : FROM flightdeck/base:bookworm\n"}
{"stream":"Step 2/2 : RUN apt-get install nope\n"}
{"stream":"\u001b[91mE: Unable to locate package nope\n\u001b[0m"}
{"stream":"\u001b[1"}
{"stream":";33mwarn\u001b[0m\n"}
{"errorDetail":{"message":"\u001b[31mreturned a non-zero code: 100\u001b[0m"}}
`
	var log strings.Builder
	p := newBuildProgress(&log)
	require.NoError(t, p.read(strings.NewReader(stream)))
	be := p.failure("flightdeck/x:1", "")
	assert.Equal(t, "RUN apt-get install nope", be.Step)
	assert.Equal(t, []string{"E: Unable to locate package nope", "warn"}, be.Tail)
	assert.Equal(t, "returned a non-zero code: 100", be.Message)
	assert.NotContains(t, be.Error(), "\x1b")
	assert.NotContains(t, log.String(), "\x1b")
	assert.Contains(t, log.String(), "E: Unable to locate package nope\nwarn\n")
}

func TestBuildKitLogIsText(t *testing.T) {
	stream := traceMessage(encodeStatus([][3]string{{"sha256:a", "[1/2] RUN \x1b[1mmake\x1b[0m", ""}}, nil)) +
		traceMessage(encodeStatus(nil, [][2]string{{"sha256:a", "\x1b[31merror: boom\x1b["}})) +
		traceMessage(encodeStatus(nil, [][2]string{{"sha256:a", "0m\n"}})) +
		traceMessage(encodeStatus([][3]string{{"sha256:a", "", "\x1b[31mexit code: 2"}}, nil)) +
		`{"errorDetail":{"message":"failed to solve: exit code: 2"}}` + "\n"
	var log strings.Builder
	p := newBuildProgress(&log)
	require.NoError(t, p.read(strings.NewReader(stream)))
	be := p.failure("flightdeck/x:1", "")
	assert.Equal(t, "[1/2] RUN make", be.Step)
	assert.Equal(t, []string{"error: boom"}, be.Tail)
	assert.NotContains(t, be.Error(), "\x1b")
	assert.NotContains(t, log.String(), "\x1b")
	assert.Contains(t, log.String(), "#1 ERROR: exit code: 2")
}

func TestBuildImageIDFromAux(t *testing.T) {
	p := newBuildProgress(&strings.Builder{})
	require.NoError(t, p.read(strings.NewReader(`{"aux":{"ID":"sha256:abc"}}`+"\n"+`{"stream":"Successfully built abc\n"}`)))
	assert.Equal(t, "sha256:abc", p.imageID)
	assert.Empty(t, p.errMsg)
}

func FuzzDecodeBuildkitStatus(f *testing.F) {
	f.Add(encodeStatus([][3]string{{"sha256:a", "RUN x", "boom"}}, [][2]string{{"sha256:a", "line\n"}}))
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeBuildkitStatus(b)
		if err != nil {
			return
		}
		p := newBuildProgress(&strings.Builder{})
		p.buildkit(st)
		_ = p.failure("x", "")
	})
}

func FuzzBuildStream(f *testing.F) {
	f.Add(`{"stream":"Step 1/1 : RUN x\n"}` + "\n" + `{"errorDetail":{"message":"m"}}`)
	f.Add(`{"id":"moby.buildkit.trace","aux":"CgA="}`)
	f.Fuzz(func(t *testing.T, s string) {
		p := newBuildProgress(&strings.Builder{})
		_ = p.read(strings.NewReader(s))
		be := p.failure("x", "")
		if len(be.Tail) > tailLines {
			t.Fatalf("tail has %d lines", len(be.Tail))
		}
		if strings.Contains(be.Error(), "\x1b") {
			t.Fatalf("the error keeps an escape: %q", be.Error())
		}
	})
}
