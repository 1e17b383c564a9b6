package report

// Lineage is what `lineage` prints without --table: every active task's
// lineage, and how many tasks were parsed and read from the cache.
type Lineage struct {
	Schema string        `json:"schema"`
	Tasks  []LineageTask `json:"tasks"`
	// Parsed counts the tasks whose SELECT was parsed by this call; Cached
	// those read from AUD_COLUMN_LINEAGE.
	Parsed    int `json:"parsed"`
	Cached    int `json:"cached"`
	NotTraced int `json:"not_traced"`
}

// LineageTask is one active task's lineage: the table it writes, its
// target columns and the tables it reads.
type LineageTask struct {
	// Task is PIPELINE.task.
	Task         string `json:"task"`
	TaskID       int64  `json:"task_id"`
	PipelineCode string `json:"pipeline_code"`
	TaskCode     string `json:"task_code"`
	Handler      string `json:"handler"`
	// Target is the table's lineage name (lower case, without the
	// warehouse's default database); "" when the task names none.
	Target  string          `json:"target"`
	Columns []LineageColumn `json:"columns"`
	// Reads are the tables the task reads, sorted.
	Reads []string `json:"reads"`
	// Error says why an SQL task's columns could not be traced; "" when
	// they were.
	Error string `json:"error,omitempty"`
	// Cached is set when the lineage was read from AUD_COLUMN_LINEAGE.
	Cached bool `json:"cached"`
}

// LineageColumn is one target column and what it is computed from.
type LineageColumn struct {
	Name string `json:"name"`
	// Sources are the base columns it reads; none for a constant or
	// COUNT(*).
	Sources []LineageSource `json:"sources"`
	// Transformation is "copy" or the expression, in the warehouse's SQL.
	Transformation string `json:"transformation"`
}

// LineageSource is one base column.
type LineageSource struct {
	Table  string `json:"table"`
	Column string `json:"column"`
}

// TableLineage is what `lineage --table` prints: the tables upstream and
// downstream of one, each with the level it is at (from 1) and the task
// that links it. A direction not asked for is null.
type TableLineage struct {
	Schema     string             `json:"schema"`
	Table      string             `json:"table"`
	Upstream   []LineageTableStep `json:"upstream"`
	Downstream []LineageTableStep `json:"downstream"`
	NotTraced  int                `json:"not_traced"`
}

// LineageTableStep is a table met walking table links.
type LineageTableStep struct {
	Level int    `json:"level"`
	Table string `json:"table"`
	Task  string `json:"task"`
}

// ColumnLineage is what `lineage --table --column` prints: the column
// edges upstream and downstream of one column, depth first. A direction
// not asked for is null.
type ColumnLineage struct {
	Schema     string              `json:"schema"`
	Table      string              `json:"table"`
	Column     string              `json:"column"`
	Upstream   []LineageColumnStep `json:"upstream"`
	Downstream []LineageColumnStep `json:"downstream"`
	NotTraced  int                 `json:"not_traced"`
}

// LineageColumnStep is a column edge met walking column links, Level steps
// away (from 1).
type LineageColumnStep struct {
	Level int `json:"level"`
	LineageColumnEdge
}

// LineageColumnEdge is a column-level link: Task computes
// TargetTable.TargetColumn from SourceTable.SourceColumn (both "" for no
// source) by Transformation.
type LineageColumnEdge struct {
	SourceTable    string `json:"source_table"`
	SourceColumn   string `json:"source_column"`
	TargetTable    string `json:"target_table"`
	TargetColumn   string `json:"target_column"`
	Transformation string `json:"transformation"`
	Task           string `json:"task"`
}

// DocsVersions is what `docs-version` prints: each task with a
// DOCUMENTATION parameter, its version and whether it changed.
type DocsVersions struct {
	Schema string `json:"schema"`
	// Recorded is false under --check, which records nothing.
	Recorded bool          `json:"recorded"`
	Tasks    []DocsVersion `json:"tasks"`
}

// DocsVersion is one task's documentation version: the latest recorded
// (or, when Changed, the one recorded now or that would be).
type DocsVersion struct {
	PipelineCode string `json:"pipeline_code"`
	TaskCode     string `json:"task_code"`
	Version      int    `json:"version"`
	Changed      bool   `json:"changed"`
}
