// Package e2e drives the built etl-craft binary as a user does, for the
// black-box tests of any package: it builds the binary once per test
// process, writes project folders whose craft-connector.yml names real
// databases (a SQLite or PostgreSQL Engine DB, a DuckDB or PostgreSQL
// warehouse), runs commands in them, starts, stops and kills `etl-craft
// server` as a real process, calls its HTTP API, and reads the Engine DB to
// wait for what the processes do.
//
// A package using it calls Main from its TestMain, so that the binary is
// removed when its tests end:
//
//	func TestMain(m *testing.M) { e2e.Main(m) }
//
// With ETL_CRAFT_E2E_RACE=1 the binary is built with the race detector, so
// that a data race in a process under test ends it with exit status 66
// and fails the test (slower: for long runs such as the concurrency
// suite's -count=20, not for CI).
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// build is the binary of this test process, built at the first Binary call.
var build struct {
	sync.Mutex
	dir  string // the folder holding it, removed by Main
	path string
	err  error
	main bool // Main is running the tests
}

// Main runs the package's tests and removes the binary they built, then
// exits with their status. Call it from TestMain.
func Main(m *testing.M) {
	build.Lock()
	build.main = true
	build.Unlock()
	code := m.Run()
	build.Lock()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	build.Unlock()
	os.Exit(code)
}

// Binary returns the path of the etl-craft binary, built from this checkout
// the first time a test of the process asks for it. A failed build fails
// every test that asks.
func Binary(t testing.TB) string {
	t.Helper()
	build.Lock()
	defer build.Unlock()
	if !build.main {
		t.Fatal("e2e.Binary: the package's TestMain must call e2e.Main, which removes the binary when the tests end")
	}
	if build.path == "" && build.err == nil {
		build.path, build.err = buildBinary()
	}
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// RaceVariable names the environment variable that builds the binary with
// the race detector when it is 1.
const RaceVariable = "ETL_CRAFT_E2E_RACE"

// buildBinary builds cmd/etl-craft into a temporary folder.
func buildBinary() (string, error) {
	dir, err := os.MkdirTemp("", "etl-craft-e2e")
	if err != nil {
		return "", err
	}
	build.dir = dir
	path := filepath.Join(dir, "etl-craft")
	args := []string{"build", "-o", path}
	if os.Getenv(RaceVariable) == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/etl-craft/etl-craft/cmd/etl-craft")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building etl-craft: %v\n%s", err, out)
	}
	return path, nil
}
