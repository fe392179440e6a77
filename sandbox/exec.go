package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// defaultMaxOutput caps each captured stream of an exec.
const defaultMaxOutput = 16 << 20

// Exec runs spec.Cmd in a running container, capturing stdout and stderr
// to files (through spec.Filter when set; each capped at MaxOutput, the
// rest dropped and Truncated set). It drains the output to EOF, then
// waits for the engine to report the process ended before trusting its
// exit code. When spec.Timeout passes, or ctx is cancelled, the whole
// container is killed, because an exec'd process and its children cannot
// be stopped any other way; a timeout returns TimedOut with ExitCode -1
// and no error. When the container dies or is removed during the exec,
// the error wraps ErrContainerGone. With spec.Stdio the exec is attached
// to it instead (execAttached).
func (d *Docker) Exec(ctx context.Context, containerID string, spec ExecSpec) (ExecResult, error) {
	start := time.Now()
	if spec.Stdio != nil {
		code, err := d.execAttached(ctx, containerID, spec)
		return ExecResult{ExitCode: code, Duration: time.Since(start)}, err
	}
	out, err := openExecOutput(spec)
	if err != nil {
		return ExecResult{}, err
	}
	defer out.close()
	opts := client.ExecCreateOptions{
		User: spec.User, Env: spec.Env, WorkingDir: spec.Workdir, Cmd: spec.Cmd,
		AttachStdout: true, AttachStderr: true,
	}
	code, timedOut, err := d.runExec(ctx, containerID, opts, out.stdout, out.stderr, spec.Timeout)
	ferr := out.flush() // what a filter held back may pass the cap
	res := ExecResult{ExitCode: code, TimedOut: timedOut, Truncated: out.truncated(), Duration: time.Since(start)}
	if cerr := out.close(); ferr == nil {
		ferr = cerr
	}
	if err == nil && ferr != nil {
		err = fmt.Errorf("exec output: %w", ferr)
	}
	return res, err
}

// runExec creates, attaches and waits for one exec. On timeout or
// cancellation it kills the container.
func (d *Docker) runExec(ctx context.Context, containerID string, opts client.ExecCreateOptions, stdout, stderr io.Writer, timeout time.Duration) (code int, timedOut bool, err error) {
	what := "exec " + strings.Join(opts.Cmd, " ")
	if len(what) > 80 {
		what = what[:77] + "..."
	}
	created, err := d.api.ExecCreate(ctx, containerID, opts)
	if err != nil {
		return -1, false, containerErr(what, err)
	}
	started := time.Now()
	att, err := d.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		d.logStream(created.ID, started, err)
		return -1, false, containerErr(what, err)
	}
	defer att.Close()
	defer func() { d.logStream(created.ID, started, err) }()

	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-copied:
		return d.execEnded(ctx, containerID, created.ID, what)
	case <-expired:
		err := d.Stop(ctx, containerID)
		att.Close()
		<-copied
		return -1, true, err
	case <-ctx.Done():
		_ = d.Stop(ctx, containerID)
		att.Close()
		<-copied
		return -1, false, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// execEnded waits for the engine to report a finished exec's exit code,
// and tells a process that ended from a container that went away.
func (d *Docker) execEnded(ctx context.Context, containerID, execID, what string) (int, bool, error) {
	delay := 5 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for {
		ins, err := d.api.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return -1, false, &EngineError{Op: what, Err: fmt.Errorf("%w: %w", ErrContainerGone, err)}
		}
		if err != nil {
			return -1, false, engineErr(what, err)
		}
		if !ins.Running {
			if gone, why := d.containerEnded(ctx, containerID, ins.ExitCode); gone {
				return ins.ExitCode, false, &EngineError{Op: what, Err: fmt.Errorf("%w: %s", ErrContainerGone, why)}
			}
			return ins.ExitCode, false, nil
		}
		if time.Now().After(deadline) {
			return -1, false, engineErr(what, fmt.Errorf("output ended but the engine still reports the process running"))
		}
		select {
		case <-ctx.Done():
			return -1, false, fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// containerEnded tells whether an exec ended because its container did.
// A process killed by a signal (exit code 128+n), or one the runtime could
// not start (126: the container was being killed as the exec began), may
// have died with its container, whose state takes a moment to settle: a
// container being killed or removed still reads as running. That case is
// watched for up to 2s.
func (d *Docker) containerEnded(ctx context.Context, containerID string, exitCode int) (bool, string) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		res, err := d.api.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
			return true, "the container was removed during the exec"
		case err != nil:
			return false, ""
		}
		st := res.Container.State
		if st == nil {
			return false, ""
		}
		if !st.Running || st.Status == "removing" || st.Status == "dead" {
			return true, fmt.Sprintf("the container stopped during the exec (%s, exit %d, OOM killed: %t)", st.Status, st.ExitCode, st.OOMKilled)
		}
		if (exitCode < 128 && exitCode != 126) || time.Now().After(deadline) || ctx.Err() != nil {
			return false, ""
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// captured is a short exec's exit code and combined output.
type captured struct {
	code int
	text string
}

// execCapture runs a short command, keeping up to 64 KiB of its output.
func (d *Docker) execCapture(ctx context.Context, containerID string, cmd []string, user string, timeout time.Duration) (captured, error) {
	buf := &capped{w: &bytes.Buffer{}, left: 64 << 10}
	opts := client.ExecCreateOptions{User: user, Cmd: cmd, AttachStdout: true, AttachStderr: true}
	code, timedOut, err := d.runExec(ctx, containerID, opts, buf, buf, timeout)
	if err != nil {
		return captured{}, err
	}
	if timedOut {
		return captured{}, fmt.Errorf("%s: timed out after %s (the container was killed)", strings.Join(cmd, " "), timeout)
	}
	return captured{code: code, text: strings.TrimSpace(buf.w.(*bytes.Buffer).String())}, nil
}

// capped passes on up to left bytes and drops the rest, always reporting
// a full write so that the stream keeps being drained.
type capped struct {
	w       io.Writer
	left    int64
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := int64(len(p))
	if n > c.left {
		c.dropped = c.dropped || n > 0
		p = p[:c.left]
	}
	if len(p) > 0 {
		if _, err := c.w.Write(p); err != nil {
			return 0, err
		}
		c.left -= int64(len(p))
	}
	return int(n), nil
}

// OutputFilter wraps the writer of a file an exec's output goes to
// (ExecSpec.Filter). Close writes what the filter held back; it must not
// close w.
type OutputFilter func(w io.Writer) io.WriteCloser

// execOutput is where an exec's streams go: each to its file, through the
// spec's filter, then capped.
type execOutput struct {
	stdout, stderr io.Writer
	caps           []*capped
	filters        []io.WriteCloser
	files          []*os.File
}

func openExecOutput(spec ExecSpec) (*execOutput, error) {
	limit := spec.MaxOutput
	if limit <= 0 {
		limit = defaultMaxOutput
	}
	o := &execOutput{stdout: io.Discard, stderr: io.Discard}
	open := func(path string) (io.Writer, error) {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("exec output: %w", err)
		}
		o.files = append(o.files, f)
		c := &capped{w: f, left: limit}
		o.caps = append(o.caps, c)
		if spec.Filter == nil {
			return c, nil
		}
		// The filter sees the whole stream, so that what it masks is
		// masked however far the cap cuts.
		fw := spec.Filter(c)
		o.filters = append(o.filters, fw)
		return fw, nil
	}
	var err error
	if spec.StdoutPath != "" {
		if o.stdout, err = open(spec.StdoutPath); err != nil {
			return nil, err
		}
	}
	switch {
	case spec.StderrPath != "":
		if o.stderr, err = open(spec.StderrPath); err != nil {
			o.close()
			return nil, err
		}
	default:
		o.stderr = o.stdout
	}
	return o, nil
}

func (o *execOutput) truncated() bool {
	for _, c := range o.caps {
		if c.dropped {
			return true
		}
	}
	return false
}

// flush writes what the filters held back.
func (o *execOutput) flush() error {
	var first error
	for _, f := range o.filters {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	o.filters = nil
	return first
}

// close flushes the filters and closes the output files once, returning
// the first error.
func (o *execOutput) close() error {
	first := o.flush()
	for _, f := range o.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	o.files = nil
	return first
}
