package script

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// packageDir is the folder holding the embedded etl_craft package that every
// script's process imports. It is written once per version of the package,
// in the user's cache folder (etl-craft/python/<digest of the package>), and
// shared by every attempt and every etl-craft process of that user: nothing
// is written per attempt, and a process killed with SIGKILL leaves nothing
// behind. Where the user has no cache folder, a folder of this process's
// own is written once instead.
var packageDir = sync.OnceValues(func() (string, error) {
	digest, err := packageDigest()
	if err != nil {
		return "", exit.Wrap(exit.Handler, err, "could not read the embedded etl_craft Python package")
	}
	if cache, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(cache, "etl-craft", "python", digest)
		if err := publishPackage(dir); err == nil {
			return dir, nil
		}
	}
	dir, err := os.MkdirTemp("", "etl-craft-python-")
	if err != nil {
		return "", exit.Wrap(exit.Handler, err, "could not write the etl_craft Python package")
	}
	return dir, writePackage(dir)
})

// packageDigest is the hex SHA-256 of the embedded package's file names and
// contents, cut to 16 characters: a new version gets a folder of its own.
func packageDigest() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(python, "python", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := python.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}

// publishPackage makes dir hold the package unless it already does: the
// package is written into a folder beside it and renamed into place, so that
// a process never sees a half-written package, and when two processes write
// it at once one rename wins and the other's copy is removed.
func publishPackage(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "etl_craft", "_main.py")); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".writing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writePackage(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "etl_craft", "_main.py")); serr == nil {
			return nil // another process published it first
		}
		return err
	}
	return nil
}

// writePackage writes the embedded etl_craft package into dir.
func writePackage(dir string) error {
	err := fs.WalkDir(python, "python", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "python" {
			return err
		}
		dest := filepath.Join(dir, strings.TrimPrefix(path, "python/"))
		if d.IsDir() {
			return os.MkdirAll(dest, 0o755)
		}
		b, err := python.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dest, b, 0o644)
	})
	return exit.Wrap(exit.Handler, err, "could not write the etl_craft Python package to %s", dir)
}
