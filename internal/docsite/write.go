package docsite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// CheckFolder refuses a folder the site may not be written into: one that
// exists and is not a folder, or a folder that holds files but no Marker
// (generate-docs did not write it, and writing would replace its files).
func CheckFolder(folder string) error {
	info, err := os.Stat(folder)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return exit.Wrap(exit.Configuration, err, "cannot read the catalog folder %s", folder)
	}
	if !info.IsDir() {
		return exit.Errorf(exit.Configuration, "cannot write the catalog into %s: it is a file, not a folder", folder)
	}
	entries, err := os.ReadDir(folder)
	if err != nil {
		return exit.Wrap(exit.Configuration, err, "cannot read the catalog folder %s", folder)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(folder, Marker)); err == nil {
		return nil
	}
	return exit.Errorf(exit.Configuration,
		"cannot write the catalog into %s: the folder holds %d file(s) and no %s marker, so generate-docs did not write it and would replace what is there; name a new or empty folder",
		folder, len(entries), Marker)
}

// Write renders the site into folder, which CheckFolder must accept, and
// returns how many pages it wrote. The site is written beside the folder
// first and swapped in whole, so a server reading the folder meanwhile
// serves the old site or the new one, never half of each.
func Write(folder string, s *Site) (int, error) {
	if err := CheckFolder(folder); err != nil {
		return 0, err
	}
	parent, base := filepath.Dir(folder), filepath.Base(folder)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return 0, exit.Wrap(exit.Configuration, err, "cannot create the folder of %s", folder)
	}
	fresh, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return 0, exit.Wrap(exit.Configuration, err, "cannot write beside %s", folder)
	}
	defer os.RemoveAll(fresh) // gone once renamed; removes what a failure left
	pages, err := s.Render(fresh)
	if err == nil {
		err = os.WriteFile(filepath.Join(fresh, Marker), []byte("written by etl-craft generate-docs; the folder is replaced whole each time\n"), 0o644)
	}
	if err == nil {
		err = os.Chmod(fresh, 0o755)
	}
	if err != nil {
		return 0, exit.Wrap(exit.Configuration, err, "cannot write the catalog into %s", folder)
	}
	if err := swapIn(fresh, folder); err != nil {
		return 0, exit.Wrap(exit.Configuration, err, "cannot put the new catalog in place at %s", folder)
	}
	return pages, nil
}

// swapIn renames fresh to folder, moving the folder's old content out of
// the way first and removing it after.
func swapIn(fresh, folder string) error {
	if _, err := os.Stat(folder); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(fresh, folder)
	}
	old, err := os.MkdirTemp(filepath.Dir(folder), "."+filepath.Base(folder)+".old-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(old)
	gone := filepath.Join(old, "site")
	if err := os.Rename(folder, gone); err != nil {
		return err
	}
	if err := os.Rename(fresh, folder); err != nil {
		_ = os.Rename(gone, folder)
		return err
	}
	return nil
}
