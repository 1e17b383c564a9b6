package retention

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// ArchiveFile is the name of a purge's archive file of a table.
func ArchiveFile(id, table string) string { return "purge-" + id + "-" + table + ".parquet" }

// archive writes every row the plan deletes to Parquet files in dir, one
// per table with rows (ArchiveFile), in the plan's snapshot, through a
// DuckDB database of its own in a scratch folder beside them, which it
// removes. Each file is written in the scratch folder, checked to hold the
// rows planned, then moved into dir. It returns the purge's id, made
// unique in dir, and the file of each table.
func archive(ctx context.Context, p *plan, planned map[string]int64, dir, id string) (string, map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return id, nil, exit.Wrap(exit.Configuration, err, "could not create the archive folder %s", dir)
	}
	id, err := uniqueID(dir, id)
	if err != nil {
		return id, nil, err
	}
	scratch, err := os.MkdirTemp(dir, ".purge-"+id+"-")
	if err != nil {
		return id, nil, exit.Wrap(exit.Configuration, err, "could not write into the archive folder %s", dir)
	}
	defer os.RemoveAll(scratch)
	w, err := warehouse.Open(ctx, warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(scratch, "archive.duckdb"), Schema: "main"})
	if err != nil {
		return id, nil, err
	}
	defer w.Close()

	exported, err := exportRows(ctx, p, w)
	if err != nil {
		return id, nil, exit.Wrap(exit.EngineDB, err, "could not read the rows to archive")
	}
	files := map[string]string{}
	for _, name := range Tables() {
		if planned[name] == 0 {
			continue
		}
		if exported[name] != planned[name] {
			return id, nil, exit.Errorf(exit.Unexpected, "the archive read %d row(s) of %s, the purge planned %d: nothing was deleted",
				exported[name], name, planned[name])
		}
		file := filepath.Join(dir, ArchiveFile(id, name))
		written := filepath.Join(scratch, ArchiveFile(id, name))
		n, err := writeParquet(ctx, w, name, written)
		if err != nil {
			return id, nil, exit.Wrap(exit.Configuration, err, "could not write the archive file %s", file)
		}
		if n != planned[name] {
			return id, nil, exit.Errorf(exit.Unexpected, "the archive file %s holds %d row(s) of %s, the purge planned %d: nothing was deleted",
				file, n, name, planned[name])
		}
		if err := os.Rename(written, file); err != nil {
			return id, nil, exit.Wrap(exit.Configuration, err, "could not write the archive file %s", file)
		}
		files[name] = file
	}
	return id, files, fault.Point("retention.after_archive")
}

// uniqueID returns id, or id-2, id-3, … when the folder holds files of a
// purge of that id already.
func uniqueID(dir, id string) (string, error) {
	for n := 1; ; n++ {
		try := id
		if n > 1 {
			try = fmt.Sprintf("%s-%d", id, n)
		}
		found, err := filepath.Glob(filepath.Join(dir, ArchiveFile(try, "*")))
		if err != nil {
			return id, exit.Wrap(exit.Configuration, err, "could not read the archive folder %s", dir)
		}
		if len(found) == 0 {
			return try, nil
		}
	}
}

// exportRows copies the plan's rows into a table of w per Engine table,
// named as it, and returns the rows copied per table.
func exportRows(ctx context.Context, p *plan, w warehouse.Warehouse) (map[string]int64, error) {
	e := clone.NewExport(p.snap, w)
	out := map[string]int64{}
	copyRows := func(name, where string, a args) error {
		n, err := e.Rows(ctx, name, where, a, w.Table("main", name))
		out[name] += n
		return err
	}
	var runs []int64
	for _, b := range p.batches {
		runs = append(runs, b.runs...)
		if b.table == nil {
			continue
		}
		for ids := range slices.Chunk(b.ids, chunk) {
			var a args
			where := b.table.key + " " + a.list(ids)
			if err := copyRows(b.table.name, where, a); err != nil {
				return out, err
			}
		}
	}
	for _, u := range unitTables {
		for ids := range slices.Chunk(runs, chunk) {
			var a args
			where := u.members(a.list(ids))
			if err := copyRows(u.name, where, a); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// writeParquet writes the rows of the table of w named name, in the order
// of its first column, to a Parquet file at path, and returns how many rows
// the file holds, read back from it.
func writeParquet(ctx context.Context, w warehouse.Warehouse, name, path string) (int64, error) {
	literal := "'" + strings.ReplaceAll(path, "'", "''") + "'"
	tx, err := w.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(ctx, "COPY (SELECT * FROM "+warehouse.Qualify(w, w.Table("main", name))+" ORDER BY 1) TO "+literal+" (FORMAT PARQUET)"); err != nil {
		return 0, err
	}
	rows, err := tx.Query(ctx, "SELECT count(*) FROM read_parquet("+literal+")")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		err = rows.Scan(&n)
	}
	if err == nil {
		err = rows.Err()
	}
	return n, err
}
