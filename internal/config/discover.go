package config

import (
	"os"
	"path/filepath"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Discover returns the path of the craft-connector.yml to read: explicit
// (the --config value) when given, else $ETL_CRAFT_CONFIG when non-empty,
// else the nearest file found searching upward from cwd, the way git finds
// .git. In each folder it tests craft-connector.yml (cwd is inside the
// project) and etl-craft/craft-connector.yml (cwd holds the project); both in
// one folder is an error. When nothing is found it returns the expected path,
// <cwd>/etl-craft/craft-connector.yml, with a "craft-connector.yml not found"
// error. Relative paths are taken from cwd; an empty cwd means the process's
// working folder. An explicit or environment path is not checked here: Load
// reports a missing file.
func Discover(explicit, cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", exit.Wrap(exit.Configuration, err, "could not read the working folder to find %s", FileName)
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return "", exit.Wrap(exit.Configuration, err, "could not read the working folder to find %s", FileName)
	}
	for _, named := range []string{explicit, os.Getenv(ConfigVariable)} {
		if named == "" {
			continue
		}
		if !filepath.IsAbs(named) {
			named = filepath.Join(cwd, named)
		}
		return filepath.Clean(named), nil
	}
	for dir := cwd; ; dir = filepath.Dir(dir) {
		var found []string
		for _, candidate := range []string{filepath.Join(dir, FileName), filepath.Join(dir, ProjectFolder, FileName)} {
			if info, err := os.Stat(candidate); err == nil && !info.IsDir() {
				found = append(found, candidate)
			}
		}
		if len(found) > 1 {
			return "", exit.Errorf(exit.Configuration, "found both %s and %s; keep one, or pass --config (or set $%s) to choose",
				found[0], found[1], ConfigVariable)
		}
		if len(found) == 1 {
			return found[0], nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	expected := filepath.Join(cwd, ProjectFolder, FileName)
	return expected, exit.Errorf(exit.Configuration, "craft-connector.yml not found at %s: no %s or %s/%s in %s or any folder above it; "+
		"write one (see %s), or pass --config or set $%s", expected, FileName, ProjectFolder, FileName, cwd, ExamplePath, ConfigVariable)
}
