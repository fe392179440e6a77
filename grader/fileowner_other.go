//go:build !unix

package grader

import "io/fs"

// fileOwner: files have no uid and gid here.
func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
