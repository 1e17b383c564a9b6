// Package quickstart writes the example project `etl-craft quickstart`
// sets up and runs: a craft-connector.yml with a SQLite Engine DB and a
// DuckDB warehouse in the project folder, project migrations that register
// an example pipeline of SQL tasks, a business-rules task, an ingestion
// script (with the CSV file it reads) and a daily schedule.
package quickstart

import (
	"embed"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/etl-craft/etl-craft/internal/exit"
)

//go:embed template
var template embed.FS

// DefaultDir is the folder quickstart writes when none is given.
const DefaultDir = "etl-craft-quickstart"

// Pipeline is the code of the example pipeline.
const Pipeline = "QUICKSTART_SALES"

// RulesTask is the example pipeline's BUSINESS_RULES task, which flags
// orders in main.orders (migrations/0002_check_orders.sql).
const RulesTask = "check_orders"

// ScriptTask is the example pipeline's PYTHON task, which loads the rates of
// data/exchange_rates.csv after its offset into main.exchange_rates
// (migrations/0003_load_rates.sql).
const ScriptTask = "load_exchange_rates"

// Write writes the example project into dir, creating it. Files that exist
// already are kept as they are, so running it again reuses the project. It
// returns the files it wrote.
func Write(dir string) ([]string, error) {
	var written []string
	err := fs.WalkDir(template, "template", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("template", path)
		target := filepath.Join(dir, rel)
		if _, err := os.Stat(target); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		b, err := template.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
		written = append(written, target)
		return nil
	})
	if err != nil {
		return written, exit.Wrap(exit.Configuration, err, "could not write the quickstart project in %s", dir)
	}
	return written, nil
}
