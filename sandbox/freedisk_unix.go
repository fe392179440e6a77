//go:build unix

package sandbox

import "syscall"

// freeDisk is the space free on the file system holding dir, as the
// engine (root) may use it; -1 when dir is not on this host (a remote
// engine) or cannot be read.
func freeDisk(dir string) int64 {
	var st syscall.Statfs_t
	if dir == "" || syscall.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bfree) * int64(st.Bsize)
}
