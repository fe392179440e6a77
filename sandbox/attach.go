package sandbox

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// execAttached runs an exec connected to spec.Stdio: input copied in until
// it ends (then the exec's stdin is closed, as a pipe's would be), output
// copied out as it comes, the terminal's size followed. It has no timeout;
// cancelling ctx ends the attachment, not the container.
func (d *Docker) execAttached(ctx context.Context, containerID string, spec ExecSpec) (int, error) {
	st := spec.Stdio
	what := "exec " + spec.Cmd[0]
	opts := client.ExecCreateOptions{
		User: spec.User, Env: spec.Env, WorkingDir: spec.Workdir, Cmd: spec.Cmd,
		AttachStdin: st.In != nil, AttachStdout: true, AttachStderr: true, TTY: st.TTY,
	}
	if st.TTY && st.Size != nil {
		w, h := st.Size()
		opts.ConsoleSize = client.ConsoleSize{Height: h, Width: w}
	}
	created, err := d.api.ExecCreate(ctx, containerID, opts)
	if err != nil {
		return -1, containerErr(what, err)
	}
	started := time.Now()
	att, err := d.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: st.TTY, ConsoleSize: opts.ConsoleSize})
	if err != nil {
		d.logStream(created.ID, started, err)
		return -1, containerErr(what, err)
	}
	defer att.Close()
	defer func() { d.logStream(created.ID, started, nil) }()
	if st.In != nil {
		// The copy may outlive the exec, blocked on a terminal's read:
		// the process is about to end then, and the read with it.
		go func() {
			_, _ = io.Copy(att.Conn, st.In)
			_ = att.CloseWrite()
		}()
	}
	if st.TTY && st.Size != nil && st.Resized != nil {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			for {
				select {
				case <-rctx.Done():
					return
				case <-st.Resized:
					w, h := st.Size()
					_, _ = d.api.ExecResize(rctx, created.ID, client.ExecResizeOptions{Height: h, Width: w})
				}
			}
		}()
	}
	copied := make(chan error, 1)
	go func() {
		var err error
		if st.TTY {
			_, err = io.Copy(st.Out, att.Reader)
		} else {
			_, err = stdcopy.StdCopy(st.Out, st.Err, att.Reader)
		}
		copied <- err
	}()
	select {
	case <-copied:
		code, _, err := d.execEnded(ctx, containerID, created.ID, what)
		return code, err
	case <-ctx.Done():
		att.Close()
		<-copied
		return -1, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// FindContainers lists the IDs of the containers, running or not, that
// carry every label given (a kept trial's, say).
func (d *Docker) FindContainers(ctx context.Context, labels map[string]string) ([]string, error) {
	f := make(client.Filters)
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, engineErr("list containers", err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids, nil
}
