package vtrace

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"unsafe"
)

// watch runs argv with an inotify watch for opens on each file, and
// returns the files opened while it ran, in files' order.
func watch(files, argv []string) ([]string, int, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, 126, err
	}
	defer syscall.Close(fd)
	byWD := map[int32]string{}
	for _, f := range files {
		// A file that cannot be watched cannot be told read; it is left
		// out of the answer, not reported opened.
		if wd, err := syscall.InotifyAddWatch(fd, f, syscall.IN_OPEN|syscall.IN_ACCESS); err == nil {
			byWD[int32(wd)] = f
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, 127, err
		}
		code = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	seen := map[string]bool{}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if f, ok := byWD[ev.Wd]; ok && ev.Mask&(syscall.IN_OPEN|syscall.IN_ACCESS) != 0 {
				seen[f] = true
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
	var opened []string
	for _, f := range files {
		if seen[f] {
			opened = append(opened, f)
		}
	}
	return opened, code, nil
}
