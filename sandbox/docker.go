package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// Docker is the Engine backed by a Docker engine's API. Make one with New;
// it is safe for concurrent use.
type Docker struct {
	api      *client.Client
	endpoint Endpoint
	host     string // this host's name, carried in owner labels
	pid      int    // this process, carried in owner labels
	opts     Options
	builds   flight[Image]
	// ancestry remembers, per image and directory, what makeDirs found
	// of the directory in a container just created from the image.
	ancestry ancestryCache
	// layerStore is where the engine keeps containers' writable layers,
	// for ContainerSpec.ReadLayers and State.Layer.
	layerStore layerStore
	// keep: what this process creates is kept on purpose (MarkKept).
	keep atomic.Bool
	// subnets hands out trial networks' subnets (subnets.go).
	subnets *subnets
}

// Options tune a Docker engine. The zero value is what flightdeck uses.
type Options struct {
	// Subnets are the ranges trial networks' subnets are carved from
	// (nil: FLIGHTDECK_SUBNETS, else the engine's default pools).
	Subnets []netip.Prefix
	// CleanupTimeout bounds each cleanup call (remove, kill, reap), which
	// runs on a context that cannot be cancelled. Default 60s.
	CleanupTimeout time.Duration
	// ProbeDir is where Preflight makes the host directory it bind-mounts to
	// check that bind mounts are visible. Default os.TempDir(); pass the
	// directory results and work dirs will live in.
	ProbeDir string
	// SupersededAge is how long ago an untagged task image must have last
	// carried a tag before Reap takes it for one whose tag moved on to a
	// later build. Default 10 minutes.
	SupersededAge time.Duration
	// Test marks every container, network, volume and snapshot this
	// process creates as a test suite's (LabelTest), and limits its
	// orphan reaping to such objects. Default: $FLIGHTDECK_TEST. Task
	// images are a shared cache and carry no test label.
	Test string
	// Log is the diagnostic log: every engine call, at debug level, with
	// its duration and outcome; cleanups and what they could not remove.
	// Nil: none.
	Log *slog.Logger
}

var _ Engine = (*Docker)(nil)

// New connects to the engine named by DOCKER_HOST, else by the current
// docker context, else the default socket, negotiating the API version.
// When no engine answers, the error is one line naming DOCKER_HOST and how
// to start an engine; it wraps ErrEngineUnavailable.
func New(ctx context.Context) (*Docker, error) {
	return NewWithOptions(ctx, Options{})
}

// NewWithOptions is New with options.
func NewWithOptions(ctx context.Context, opts Options) (*Docker, error) {
	if opts.CleanupTimeout <= 0 {
		opts.CleanupTimeout = 60 * time.Second
	}
	if opts.ProbeDir == "" {
		opts.ProbeDir = os.TempDir()
	}
	if opts.SupersededAge <= 0 {
		opts.SupersededAge = 10 * time.Minute
	}
	if opts.Test == "" {
		opts.Test = os.Getenv(TestEnv)
	}
	sn, err := newSubnets(opts.Subnets)
	if err != nil {
		return nil, err
	}
	ep, err := resolveEndpoint(os.Getenv, dockerConfigDir())
	if err != nil {
		return nil, fmt.Errorf("%w: %v (set DOCKER_HOST to a running engine's address)", ErrEngineUnavailable, err)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	clientOpts := []client.Opt{client.WithHost(ep.Host), client.WithAPIVersionFromEnv()}
	if opts.Log.Enabled(ctx, slog.LevelDebug) {
		clientOpts = append(clientOpts, client.WithTraceProvider(callTracing{log: opts.Log}),
			client.WithTraceOptions(otelhttp.WithSpanNameFormatter(callName)))
	}
	if ep.TLSCA != "" || ep.TLSCert != "" {
		clientOpts = append(clientOpts, client.WithTLSClientConfig(ep.TLSCA, ep.TLSCert, ep.TLSKey))
	} else if ep.FromEnv {
		clientOpts = append(clientOpts, client.WithTLSClientConfigFromEnv())
	}
	api, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v (set DOCKER_HOST to a running engine's address)", ErrEngineUnavailable, ep.Host, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := api.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = api.Close()
		return nil, unavailable(ep, err)
	}
	hostname, _ := os.Hostname()
	if strings.HasPrefix(ep.Host, "unix://") {
		// A local engine's networks are the host's routes too.
		sn.routes = hostRoutes
	}
	return &Docker{api: api, endpoint: ep, host: hostname, pid: os.Getpid(), opts: opts, subnets: sn}, nil
}

// logger is the diagnostic log (a discarding one when none was given).
func (d *Docker) logger() *slog.Logger {
	if d.opts.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.opts.Log
}

// Close releases the client's connections. Containers are not touched.
func (d *Docker) Close() error { return d.api.Close() }

// Endpoint reports where the engine was found.
func (d *Docker) Endpoint() Endpoint { return d.endpoint }

// unavailable is the one-line error for an engine that does not answer.
func unavailable(ep Endpoint, err error) error {
	how := "start one (sudo systemctl start docker, or open Docker Desktop/colima)"
	where := ep.Host
	if ep.Context != "" {
		where += " (docker context " + ep.Context + ")"
	}
	return &EngineError{Op: "connect to the Docker engine", Err: fmt.Errorf(
		"%w at %s: set DOCKER_HOST to a running engine's address, or %s (%v)",
		ErrEngineUnavailable, where, how, err)}
}

// cleanupContext is a context for cleanup that the caller's cancellation
// does not reach, with its own deadline.
func (d *Docker) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d.opts.CleanupTimeout)
}
