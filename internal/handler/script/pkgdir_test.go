package script

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Eight processes' worth of writers publishing the package into the same
// folder at once: each gets the whole package, and no writer's scratch
// folder is left beside it.
func TestThePackageIsPublishedOnceWhateverTheRace(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "digest")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = publishPackage(dir)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	for _, name := range []string{"__init__.py", "_main.py", "scripting.py"} {
		want, err := python.ReadFile("python/etl_craft/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "etl_craft", name))
		if err != nil || string(got) != string(want) {
			t.Fatalf("etl_craft/%s is not the embedded file (err %v)", name, err)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Fatalf("%d entries beside the package, want it alone", len(entries))
	}
}
