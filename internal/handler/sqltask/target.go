package sqltask

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The engine-managed columns, in the order etl-craft appends them after the
// SELECT's own columns.
const (
	colPipelineID    = "PIPELINE_ID"
	colPipelineRunID = "PIPELINE_RUN_ID"
	colTaskRunID     = "TASK_RUN_ID"
	colHashKey       = "HASH_KEY"
	colCreateDate    = "CREATE_DATE"
	colCreatedBy     = "CREATED_BY"
	colUpdateDate    = "UPDATE_DATE"
	colUpdatedBy     = "UPDATED_BY"
	colDeleteFlag    = "DELETE_FLAG"
	colActiveFlag    = "ACTIVE_FLAG"
	colRowID         = "ROW_ID"
)

// IdentityColumns are the run-identity columns every action stamps on the
// rows it writes; upgrade-targets adds them to older targets.
var IdentityColumns = []string{colPipelineID, colPipelineRunID, colTaskRunID}

// engineColumns are every column etl-craft manages: a SELECT may not return
// any of them.
var engineColumns = []string{colPipelineID, colPipelineRunID, colTaskRunID, colHashKey, colCreateDate,
	colCreatedBy, colUpdateDate, colUpdatedBy, colDeleteFlag, colActiveFlag, colRowID}

// engineTypes are the portable types of the engine-managed columns.
var engineTypes = map[string]warehouse.Type{
	colPipelineID: warehouse.BigInt, colPipelineRunID: warehouse.BigInt, colTaskRunID: warehouse.BigInt,
	colHashKey: warehouse.String, colCreateDate: warehouse.Timestamp, colCreatedBy: warehouse.String,
	colUpdateDate: warehouse.Timestamp, colUpdatedBy: warehouse.String, colDeleteFlag: warehouse.String,
	colActiveFlag: warehouse.String, colRowID: warehouse.BigInt,
}

// auditColumns returns the engine columns, besides ROW_ID, that the target
// of a writing action has.
func auditColumns(action string) []string {
	scd1 := append(slices.Clone(IdentityColumns), colHashKey, colCreateDate, colCreatedBy, colUpdateDate, colUpdatedBy, colDeleteFlag)
	switch action {
	case OverwriteTable:
		return append(slices.Clone(IdentityColumns), colUpdateDate)
	case AppendTable:
		return append(slices.Clone(IdentityColumns), colCreateDate)
	case SCD1Merge:
		return scd1
	case SCD2Merge:
		return append(scd1, colActiveFlag)
	}
	return slices.Clone(IdentityColumns)
}

// isEngineColumn reports whether name is an engine-managed column, in any case.
func isEngineColumn(name string) bool {
	return slices.ContainsFunc(engineColumns, func(c string) bool { return strings.EqualFold(c, name) })
}

// target is the table a task writes.
type target struct {
	name  string // as configured, such as staging.orders
	table warehouse.Table
	key   string // lower-case catalog.schema.table: its AUD_TARGET_HASH_VERSION key
}

// resolveTarget places schema.table in the warehouse's catalog; a
// database.schema.table must name that catalog. The table name is folded as
// the warehouse folds unquoted names.
func resolveTarget(w warehouse.Warehouse, name string, parts []string) (target, error) {
	catalog := w.Catalog()
	if len(parts) == 3 && !strings.EqualFold(parts[0], catalog) {
		return target{}, exit.Errorf(exit.SQLGuard,
			"%s names the database %s, but the warehouse writes to %s: write %s.%s, or the warehouse's own database",
			name, parts[0], catalog, parts[1], parts[2])
	}
	schema, table := parts[len(parts)-2], parts[len(parts)-1]
	t := warehouse.Table{Catalog: catalog, Schema: schema, Name: w.Fold(table)}
	return target{name: name, table: t, key: strings.ToLower(t.Full())}, nil
}

// ParseTarget resolves a schema.table or database.schema.table name, as
// TARGET_OBJECT and --target take it, in the warehouse.
func ParseTarget(w warehouse.Warehouse, name string) (warehouse.Table, string, error) {
	parts, failures := targetParts(strings.TrimSpace(name), nil)
	if len(failures) > 0 {
		return warehouse.Table{}, "", exit.Errorf(exit.Usage, "%s", strings.Replace(failures[0], pTarget, "the target", 1))
	}
	t, err := resolveTarget(w, name, parts)
	return t.table, t.key, err
}

// column finds a column by name in any case.
func column(cols []warehouse.ColumnInfo, name string) (warehouse.ColumnInfo, bool) {
	i := slices.IndexFunc(cols, func(c warehouse.ColumnInfo) bool { return strings.EqualFold(c.Name, name) })
	if i < 0 {
		return warehouse.ColumnInfo{}, false
	}
	return cols[i], true
}

// missing returns the names of want that cols lacks, in order.
func missing(cols []warehouse.ColumnInfo, want []string) []string {
	var out []string
	for _, w := range want {
		if _, ok := column(cols, w); !ok {
			out = append(out, w)
		}
	}
	return out
}

// userColumns returns the columns that are not engine-managed.
func userColumns(cols []warehouse.ColumnInfo) []warehouse.ColumnInfo {
	var out []warehouse.ColumnInfo
	for _, c := range cols {
		if !isEngineColumn(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// names returns the names of cols.
func names(cols []warehouse.ColumnInfo) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// aliasFor suggests a plain name, in the warehouse's folding, for a column
// name that needs quoting.
func aliasFor(d warehouse.Dialect, name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "col_" + s
	}
	return d.Fold(s)
}

// selectProblems checks the SELECT's output columns: plain names in the
// warehouse's folding case, none of them engine-managed.
func selectProblems(d warehouse.Dialect, cols []warehouse.ColumnInfo) error {
	var managed []string
	for _, c := range cols {
		if isEngineColumn(c.Name) {
			managed = append(managed, c.Name)
		}
	}
	if len(managed) > 0 {
		return fmt.Errorf("the SELECT returns %s, which etl-craft manages: remove %s from the SELECT",
			strings.Join(managed, ", "), plural(len(managed), "it", "them"))
	}
	for _, c := range cols {
		if !plainName.MatchString(c.Name) || d.Fold(c.Name) != c.Name {
			return fmt.Errorf("the SELECT's column %q needs quoting on %s: name it with AS %s", c.Name, d.Name(), aliasFor(d, c.Name))
		}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
