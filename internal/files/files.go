// Package files holds the host file operations the run, its trials and
// the fake engine share: emptying a dir, linking or copying a file, and
// copying a tree without following its links.
package files

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
)

// ResetDir makes dir exist and be empty.
func ResetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	return nil
}

// LinkOrCopy puts src at dst, as a hard link when it can.
func LinkOrCopy(src, dst string) error {
	os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(dst, data)
}

// CopyTree copies the directories, regular files and symbolic links (as
// links, never followed) under src into dst, keeping permission bits and
// replacing what dst already has of the same name; directories get theirs
// last (with the owner's rwx kept), so a read-only one can still be
// filled. Other kinds of file are left out.
func CopyTree(src, dst string) error {
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, info.Mode().Perm()})
			return nil
		case info.Mode().IsRegular():
			return CopyFile(p, target, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			os.Remove(target)
			return os.Symlink(link, target)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode|0o700); err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	return nil
}

// CopyFile copies a regular file, replacing dst, with mode's permission bits.
func CopyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	os.Remove(dst) // a link or a read-only file of the same name
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode.Perm())
}

// SHA256 is the hex SHA-256 of a file's bytes.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
