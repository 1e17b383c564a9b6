package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiscover(t *testing.T) {
	t.Setenv(ConfigVariable, "")
	root := writeFiles(t, map[string]string{
		"repo/etl-craft/" + FileName:      minimal,
		"repo/etl-craft/sql_files/a.sql":  "select 1",
		"both/" + FileName:                minimal,
		"both/etl-craft/" + FileName:      minimal,
		"repo/src/deep/.keep":             "",
		"nothing/here/.keep":              "",
		"dirnamed/" + FileName + "/.keep": "",
	})
	inProject := filepath.Join(root, "repo", "etl-craft", FileName)
	cases := []struct {
		name     string
		explicit string
		env      string
		cwd      string
		want     string
		wantErr  []string
	}{
		{"explicit wins", "/x/" + FileName, "/y/" + FileName, root, "/x/" + FileName, nil},
		{"explicit relative to cwd", "conf/" + FileName, "", root, filepath.Join(root, "conf", FileName), nil},
		{"environment next", "", "/y/" + FileName, root, "/y/" + FileName, nil},
		{"inside the project", "", "", filepath.Join(root, "repo", "etl-craft", "sql_files"), inProject, nil},
		{"the folder holding the project", "", "", filepath.Join(root, "repo"), inProject, nil},
		{"upward from deep below", "", "", filepath.Join(root, "repo", "src", "deep"), inProject, nil},
		{"both in one folder", "", "", filepath.Join(root, "both"), "",
			[]string{"found both " + filepath.Join(root, "both", FileName) + " and " + filepath.Join(root, "both", "etl-craft", FileName), "--config"}},
		{"a folder named like the file is not a match", "", "", filepath.Join(root, "dirnamed"),
			filepath.Join(root, "dirnamed", "etl-craft", FileName), []string{"craft-connector.yml not found"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(ConfigVariable, c.env)
			got, err := Discover(c.explicit, c.cwd)
			if c.wantErr != nil {
				wantConfigError(t, err, c.wantErr...)
			} else if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Discover = %q; want %q", got, c.want)
			}
		})
	}
}

func TestDiscoverNotFound(t *testing.T) {
	t.Setenv(ConfigVariable, "")
	cwd := t.TempDir()
	got, err := Discover("", cwd)
	want := filepath.Join(cwd, "etl-craft", FileName)
	if got != want {
		t.Errorf("Discover = %q; want the expected path %q", got, want)
	}
	wantConfigError(t, err, "craft-connector.yml not found at "+want)
}

func TestDiscoverUsesTheWorkingFolder(t *testing.T) {
	t.Setenv(ConfigVariable, "")
	dir := writeFiles(t, map[string]string{FileName: minimal})
	t.Chdir(dir)
	got, err := Discover("", "")
	if err != nil || got != filepath.Join(dir, FileName) {
		t.Errorf("Discover = %q, %v; want %q", got, err, filepath.Join(dir, FileName))
	}
}

func TestMigrationsDir(t *testing.T) {
	t.Setenv(MigrationsVariable, "")
	dir := writeFiles(t, map[string]string{FileName: minimal})
	cfg, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	check := func(flag, wantDir string, wantExplicit bool) {
		t.Helper()
		got, explicit := cfg.MigrationsDir(flag)
		if got != wantDir || explicit != wantExplicit {
			t.Errorf("MigrationsDir(%q) = %q, %v; want %q, %v", flag, got, explicit, wantDir, wantExplicit)
		}
	}
	check("", "", false)
	if err := os.Mkdir(filepath.Join(dir, "migrations"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("", filepath.Join(dir, "migrations"), false)
	t.Setenv(MigrationsVariable, "/env/migrations")
	check("", "/env/migrations", true)
	check("/flag/migrations", "/flag/migrations", true)
}
