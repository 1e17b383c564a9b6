package quickstart_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/etl-craft/etl-craft/internal/quickstart"
)

// TestWriteKeepsWhatExists: Write writes every file of the example project
// once; a second Write writes none, and keeps a file the user changed.
func TestWriteKeepsWhatExists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qs")
	written, err := quickstart.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, w := range written {
		r, _ := filepath.Rel(dir, w)
		rel = append(rel, filepath.ToSlash(r))
	}
	slices.Sort(rel)
	want := []string{"craft-connector.yml", "data/exchange_rates.csv", "ingestion_scripts/load_exchange_rates.py",
		"migrations/0001_example_pipeline.sql", "migrations/0002_check_orders.sql", "migrations/0003_load_rates.sql"}
	if !slices.Equal(rel, want) {
		t.Fatalf("wrote %q, want %q", rel, want)
	}
	rates := filepath.Join(dir, "data", "exchange_rates.csv")
	if err := os.WriteFile(rates, []byte("rate_date,currency,per_usd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if written, err = quickstart.Write(dir); err != nil || len(written) != 0 {
		t.Fatalf("second Write: wrote %q, %v", written, err)
	}
	if b, _ := os.ReadFile(rates); string(b) != "rate_date,currency,per_usd\n" {
		t.Fatalf("Write replaced the changed %s:\n%s", rates, b)
	}
}
