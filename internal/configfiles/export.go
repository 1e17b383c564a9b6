package configfiles

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// Exported is what Export wrote.
type Exported struct {
	// Set is the files as written, read back: its revision is what a plan
	// of them shows.
	Set *Set
	// Rows counts the rows written per file.
	Rows map[string]int
}

// Export writes the six files into dir (created when missing), one row per
// key of each table: the active row, else the newest retired one. A file
// that exists already is refused (exit 25) unless force is set.
func Export(ctx context.Context, db *engine.DB, dir string, force bool) (Exported, error) {
	if err := Ready(ctx, db); err != nil {
		return Exported{}, err
	}
	if !force {
		for _, f := range files {
			path := filepath.Join(dir, f.name)
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				return Exported{}, exit.Fieldf(exit.ConfigFiles, "%s exists already: pass {force} to overwrite the config files", path)
			}
		}
	}
	texts := make([][]byte, len(files))
	out := Exported{Rows: map[string]int{}}
	for i := range files {
		f := &files[i]
		current, order, err := currentRows(ctx, db, f)
		if err != nil {
			return Exported{}, err
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Write(f.header())
		for _, k := range order {
			rec := make([]string, 0, len(f.header()))
			for _, c := range f.header() {
				rec = append(rec, current[k].values[c])
			}
			w.Write(rec)
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return Exported{}, err
		}
		texts[i] = buf.Bytes()
		out.Rows[f.name] = len(order)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Exported{}, exit.Wrap(exit.ConfigFiles, err, "cannot create the config folder %s", dir)
	}
	for i, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, texts[i], 0o644); err != nil {
			return Exported{}, exit.Wrap(exit.ConfigFiles, err, "cannot write %s", path)
		}
	}
	set, err := Read(dir)
	if err != nil {
		return Exported{}, err
	}
	out.Set = set
	return out, nil
}
