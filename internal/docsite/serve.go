package docsite

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// files serves the files of a catalog folder, and nothing else: a path is
// served only when its real path (every symbolic link followed) is a
// regular file inside the folder, and neither the path asked for nor the
// real path has a hidden element (a name starting with a dot, such as the
// catalog's marker or a .git folder). A folder is served by its
// index.html, never listed. Files are opened through an os.Root of the
// folder, which cannot reach outside it.
type files struct {
	root *os.Root
	// real is the folder's real path, every link followed.
	real string
}

// openFiles opens the folder's files.
func openFiles(folder string) (*files, error) {
	real, err := filepath.EvalSymlinks(folder)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &files{root: root, real: real}, nil
}

// ServeHTTP serves the file the request's path names, 404 for any other.
func (s *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	dir := strings.HasSuffix(r.URL.Path, "/")
	if dir {
		name = path.Join(name, "index.html")
	}
	real, ok := s.resolve(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	// Not blocking: opening a FIFO would wait for a writer.
	f, err := s.root.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		http.NotFound(w, r)
	case info.IsDir() && !dir:
		// A folder's address ends with a slash, where its index.html is.
		if index, ok := s.resolve(path.Join(name, "index.html")); ok && s.regular(index) {
			http.Redirect(w, r, path.Base(r.URL.Path)+"/", http.StatusMovedPermanently)
			return
		}
		http.NotFound(w, r)
	case !info.Mode().IsRegular():
		http.NotFound(w, r)
	default:
		http.ServeContent(w, r, info.Name(), info.ModTime(), f)
	}
}

// resolve returns the real path of name (slash-separated, relative to the
// folder), relative to the folder, with ok false when name or its real
// path has a hidden element, the real path is outside the folder, or
// nothing is there.
func (s *files) resolve(name string) (string, bool) {
	if hidden(name) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(filepath.Join(s.real, filepath.FromSlash(name)))
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(s.real, real)
	if err != nil || !filepath.IsLocal(rel) || hidden(filepath.ToSlash(rel)) {
		return "", false
	}
	return rel, true
}

// regular reports whether the folder's file rel is a regular file.
func (s *files) regular(rel string) bool {
	info, err := s.root.Stat(rel)
	return err == nil && info.Mode().IsRegular()
}

// hidden reports whether a slash-separated relative path has an element
// whose name starts with a dot.
func hidden(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") && part != "." {
			return true
		}
	}
	return false
}

// Close closes the folder.
func (s *files) Close() error { return s.root.Close() }
