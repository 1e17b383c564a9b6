package report

// Clone is what one clone wrote, table by table, in upper-cased table-name
// order (etl-craft clone --format json).
type Clone struct {
	Schema string        `json:"schema"`
	Tables []ClonedTable `json:"tables"`
}

// ClonedTable is one mirror a clone wrote. Rows is what the mirror holds
// after the copy (the rows a full copy copies); Copied is what this copy
// wrote: every row for a full copy, the changed rows for an incremental
// one. Copy is "incremental" or "full", and Why says why.
type ClonedTable struct {
	Table   string   `json:"table"`
	Mirror  string   `json:"mirror"`
	Rows    int64    `json:"rows"`
	Copied  int64    `json:"copied"`
	Copy    string   `json:"copy"`
	Why     string   `json:"why"`
	Created bool     `json:"created"`
	Added   []string `json:"added"`
}
