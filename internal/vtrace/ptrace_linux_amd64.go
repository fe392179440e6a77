//go:build linux && amd64

package vtrace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strconv"
	"syscall"
)

// The system calls recorded (x86-64 numbers).
const (
	sysWrite    = 1
	sysOpen     = 2
	sysExecve   = 59
	sysOpenat   = 257
	sysExecveat = 322
	sysOpenat2  = 437
)

const (
	atFDCWD   = -100
	maxPath   = 4096
	maxArgs   = 16
	writeMask = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_CREAT | syscall.O_TRUNC
)

// maxOut caps what is recorded of one program's output.
const maxOut = 16 << 10

// pending is a traced process's system call between its entry and exit,
// and what the program it runs printed.
type pending struct {
	inCall bool
	fresh  bool // a new child whose first stop (SIGSTOP) is still to come
	ev     *Event
	// prog is the program the process runs since its last exec (the
	// script, for an interpreter's), out what it wrote to its stdout and
	// stderr: a stub in its place prints the same.
	prog string
	out  []byte
}

// flush writes what the process's program printed as an "out" event.
func (p *pending) flush(enc *json.Encoder) {
	if p.prog != "" && len(p.out) > 0 {
		enc.Encode(&Event{Op: "out", Path: p.prog, Data: string(p.out)})
	}
	p.out = nil
}

// trace runs argv under ptrace, following every child, and writes each
// successful exec and open to w. Its result is argv's exit code.
func trace(argv []string, w io.Writer) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	root := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(root, &ws, syscall.WALL, nil); err != nil {
		return 126, fmt.Errorf("wait for %s to start: %w", argv[0], err)
	}
	opts := syscall.PTRACE_O_TRACESYSGOOD | syscall.PTRACE_O_TRACEFORK | syscall.PTRACE_O_TRACEVFORK |
		syscall.PTRACE_O_TRACECLONE | syscall.PTRACE_O_TRACEEXEC | 0x100000 /* PTRACE_O_EXITKILL */
	if err := syscall.PtraceSetOptions(root, opts); err != nil {
		syscall.Kill(root, syscall.SIGKILL)
		return 126, fmt.Errorf("trace %s: %w", argv[0], err)
	}
	enc := json.NewEncoder(w)
	procs := map[int]*pending{root: {}}
	code := 0
	syscall.PtraceSyscall(root, 0)
	for len(procs) > 0 {
		pid, err := syscall.Wait4(-1, &ws, syscall.WALL, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			break
		}
		if ws.Exited() || ws.Signaled() {
			if pid == root {
				code = ws.ExitStatus()
				if ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
			}
			if p := procs[pid]; p != nil {
				p.flush(enc)
			}
			delete(procs, pid)
			continue
		}
		if !ws.Stopped() {
			continue
		}
		p := procs[pid]
		sig := ws.StopSignal()
		switch {
		case p == nil:
			// A new child reported before its parent's fork event: its
			// first stop is SIGSTOP, which it must not get.
			procs[pid] = &pending{}
			if sig == syscall.SIGSTOP {
				sig = 0
			}
		case sig == syscall.SIGTRAP|0x80:
			p.step(pid, enc)
			sig = 0
		case sig == syscall.SIGTRAP && ws.TrapCause() != 0:
			switch ws.TrapCause() {
			case syscall.PTRACE_EVENT_FORK, syscall.PTRACE_EVENT_VFORK, syscall.PTRACE_EVENT_CLONE:
				if msg, err := syscall.PtraceGetEventMsg(pid); err == nil {
					if _, ok := procs[int(msg)]; !ok {
						procs[int(msg)] = &pending{fresh: true}
					}
				}
			}
			sig = 0
		case sig == syscall.SIGSTOP && p.fresh:
			p.fresh = false
			sig = 0
		}
		syscall.PtraceSyscall(pid, int(sig))
	}
	return code, nil
}

// step handles a system-call stop: at the entry of a recorded call it reads
// the path (and argv), at its exit it writes the event when the call
// succeeded.
func (p *pending) step(pid int, enc *json.Encoder) {
	var regs syscall.PtraceRegs
	if syscall.PtraceGetRegs(pid, &regs) != nil {
		return
	}
	if p.inCall {
		p.inCall = false
		if p.ev != nil && int64(regs.Rax) >= 0 {
			enc.Encode(p.ev)
			if p.ev.Op == "exec" {
				p.flush(enc)
				p.prog = p.ev.Path
				if s := scriptPath(*p.ev); s != "" {
					p.prog = s
				}
			}
		}
		p.ev = nil
		return
	}
	p.inCall = true
	p.ev = entry(pid, &regs)
	if regs.Orig_rax == sysWrite && (regs.Rdi == 1 || regs.Rdi == 2) && p.prog != "" && len(p.out) < maxOut {
		p.out = append(p.out, readMem(pid, regs.Rsi, min(int(regs.Rdx), maxOut-len(p.out)))...)
	}
}

// readMem reads n bytes of the tracee's memory at addr (none when it
// cannot).
func readMem(pid int, addr uint64, n int) []byte {
	if n <= 0 {
		return nil
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, n)
	got, _ := f.ReadAt(buf, int64(addr))
	return buf[:got]
}

// entry reads a recorded call's arguments at its entry; nil for any other
// call.
func entry(pid int, r *syscall.PtraceRegs) *Event {
	var dirfd int64 = atFDCWD
	var pathAddr, flags, argvAddr uint64
	op := "open"
	switch r.Orig_rax {
	case sysOpen:
		pathAddr, flags = r.Rdi, r.Rsi
	case sysOpenat:
		dirfd, pathAddr, flags = int64(int32(r.Rdi)), r.Rsi, r.Rdx
	case sysOpenat2:
		dirfd, pathAddr = int64(int32(r.Rdi)), r.Rsi
		var how [8]byte
		if n, _ := syscall.PtracePeekData(pid, uintptr(r.Rdx), how[:]); n == 8 {
			flags = uint64(how[0]) | uint64(how[1])<<8 | uint64(how[2])<<16 | uint64(how[3])<<24
		}
	case sysExecve:
		op, pathAddr, argvAddr = "exec", r.Rdi, r.Rsi
	case sysExecveat:
		op, dirfd, pathAddr, argvAddr = "exec", int64(int32(r.Rdi)), r.Rsi, r.Rdx
	default:
		return nil
	}
	p := readString(pid, pathAddr)
	if p == "" {
		return nil
	}
	cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if !path.IsAbs(p) {
		base := cwd
		if dirfd != atFDCWD {
			base, _ = os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatInt(dirfd, 10))
		}
		p = path.Join(base, p)
	}
	ev := &Event{Op: op, Path: path.Clean(p), Cwd: cwd}
	if op == "open" {
		ev.Write = flags&writeMask != 0
	} else {
		ev.Argv = readArgv(pid, argvAddr)
	}
	return ev
}

// readString reads a NUL-terminated string of the tracee's, word by word.
func readString(pid int, addr uint64) string {
	if addr == 0 {
		return ""
	}
	var out []byte
	var word [8]byte
	for len(out) < maxPath {
		n, err := syscall.PtracePeekData(pid, uintptr(addr)+uintptr(len(out)), word[:])
		if err != nil || n == 0 {
			break
		}
		for _, b := range word[:n] {
			if b == 0 {
				return string(out)
			}
			out = append(out, b)
		}
	}
	return string(out)
}

// readArgv reads the first maxArgs strings of a NULL-terminated argv.
func readArgv(pid int, addr uint64) []string {
	var out []string
	var word [8]byte
	for i := 0; addr != 0 && i < maxArgs; i++ {
		if n, err := syscall.PtracePeekData(pid, uintptr(addr)+uintptr(8*i), word[:]); err != nil || n != 8 {
			break
		}
		p := uint64(0)
		for j := 7; j >= 0; j-- {
			p = p<<8 | uint64(word[j])
		}
		if p == 0 {
			break
		}
		out = append(out, readString(pid, p))
	}
	return out
}
