package warehouse

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// TestVerifyNamesAFileRemovedOrReplaced: a DuckDB warehouse is what it
// opened while its file stays; a file removed, or another put in its place,
// fails Verify naming it, after Close too.
func TestVerifyNamesAFileRemovedOrReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name, want string
		change     func(path string) error
	}{
		{"removed", "is gone: it was removed while it was open", os.Remove},
		{"replaced", "is not the file that was opened: it was replaced while it was open", func(path string) error {
			other := path + ".other"
			if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
				return err
			}
			return os.Rename(other, path)
		}},
	} {
		path := filepath.Join(t.TempDir(), "w.duckdb")
		w, err := Open(ctx, Options{Kind: DuckDB, Path: path, Schema: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Verify(); err != nil {
			t.Fatalf("%s: a file just opened: %v", c.name, err)
		}
		if err := c.change(path); err != nil {
			t.Fatal(err)
		}
		err = w.Verify()
		if exit.CodeOf(err) != exit.ConnectionTest || !strings.Contains(err.Error(), "the warehouse file "+path+" "+c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
		w.Close()
		if err := w.Verify(); err == nil {
			t.Errorf("%s: Verify after Close: %v", c.name, err)
		}
	}
	mem, err := Open(ctx, Options{Kind: DuckDB, Schema: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.Verify(); err != nil {
		t.Errorf("in memory: %v", err)
	}
}
