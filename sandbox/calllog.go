package sandbox

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The engine's client traces each HTTP request it makes through
// OpenTelemetry; a tracer of flightdeck's own turns each request into one
// debug line of the diagnostic log: the call (method and path, without the
// query, where build arguments and filters could carry a secret), its
// status or error, and how long it took, the response's body read
// included (an exec's output, a copy's archive). No span leaves the
// process.

// callTracing is a TracerProvider whose spans log engine calls.
type callTracing struct {
	noop.TracerProvider
	log *slog.Logger
}

func (p callTracing) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return callTracer{log: p.log}
}

type callTracer struct {
	noop.Tracer
	log *slog.Logger
}

// Start begins a call; name is callName's.
func (t callTracer) Start(ctx context.Context, name string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := &callSpan{log: t.log, start: time.Now(), call: name}
	return trace.ContextWithSpan(ctx, s), s
}

// callSpan is one engine call.
type callSpan struct {
	noop.Span
	log   *slog.Logger
	start time.Time

	call string

	mu     sync.Mutex
	status int64
	err    string
	ended  bool
}

// callName names a request as the log shows it: its method and path,
// without the API version or the query.
func callName(_ string, r *http.Request) string {
	return r.Method + " " + apiVersion.ReplaceAllString(r.URL.Path, "")
}

// apiVersion is the version prefix of an API path (/v1.41/containers/…).
var apiVersion = regexp.MustCompile(`^/v[0-9]+\.[0-9]+`)

func (s *callSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range kv {
		switch a.Key {
		case "http.response.status_code", "http.status_code":
			s.status = a.Value.AsInt64()
		}
	}
}

func (s *callSpan) SetStatus(code codes.Code, desc string) {
	if code != codes.Error || desc == "" {
		return
	}
	s.mu.Lock()
	s.err = desc
	s.mu.Unlock()
}

func (s *callSpan) End(...trace.SpanEndOption) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	status, errMsg := s.status, s.err
	s.mu.Unlock()
	attrs := []any{"call", s.call, "took", time.Since(s.start).Round(time.Microsecond)}
	if status != 0 {
		attrs = append(attrs, "status", status)
	}
	if errMsg != "" {
		attrs = append(attrs, "err", errMsg)
	}
	s.log.Debug("engine call", attrs...)
}

// logStream logs an exec's start, which the client makes over a hijacked
// connection that its tracing does not see: the call lasts until the
// exec's output ends.
func (d *Docker) logStream(execID string, start time.Time, err error) {
	attrs := []any{"call", "POST /exec/" + execID + "/start", "took", time.Since(start).Round(time.Microsecond)}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	d.logger().Debug("engine call", attrs...)
}
