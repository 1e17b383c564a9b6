package report

// Purge is what one purge deleted, or with a dry run would delete
// (etl-craft purge --format json).
type Purge struct {
	Schema string `json:"schema"`
	// PurgeID names the purge in its archive files and its AUD_ACTIONS row.
	PurgeID string `json:"purge_id"`
	DryRun  bool   `json:"dry_run"`
	// Retention holds, per kind of history (runs, logs, actions,
	// metadata_changes, interventions), how long it is kept: an age such
	// as 400d or 12h0m0s, or forever.
	Retention map[string]string `json:"retention"`
	// Cutoffs holds, per kind kept for a time, the moment before which it
	// goes.
	Cutoffs map[string]Instant `json:"cutoffs"`
	// Tables lists every table a purge deletes from, with its rows.
	Tables []PurgedTable `json:"tables"`
	// Rows is the total of the tables' rows.
	Rows int64 `json:"rows"`
	// LogFiles is how many attempt log files went.
	LogFiles int64 `json:"log_files"`
	// Batches is how many transactions deleted rows (0 on a dry run).
	Batches int `json:"batches"`
	// KeptRuns is how many planned runs came to be relied on while the
	// purge ran, and were kept.
	KeptRuns int `json:"kept_runs"`
	// ArchiveDir is the folder of the archive files, "" without one.
	ArchiveDir string `json:"archive_dir"`
	// Vacuumed says the freed space was given back.
	Vacuumed bool `json:"vacuumed"`
}

// PurgedTable is one table of a purge: its rows deleted (or that would
// be), and the Parquet file that archives them ("" without an archive or
// rows).
type PurgedTable struct {
	Table   string `json:"table"`
	Rows    int64  `json:"rows"`
	Archive string `json:"archive"`
}
