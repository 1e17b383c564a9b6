package cli

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lineage"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// lineageFlags are the flags of the lineage command.
type lineageFlags struct {
	table, column        string
	upstream, downstream bool
	depth                int
	refresh, strict      bool
}

func (a *app) lineageCommand() *cobra.Command {
	var f lineageFlags
	cmd := &cobra.Command{
		Use:   "lineage [--table schema.table [--column c]]",
		Short: "Show where tables and columns come from and where they go",
		Long: "lineage parses the SELECT of every active SQL task with the warehouse's own parser (DuckDB's\n" +
			"or PostgreSQL's) and maps each target column to the source columns it is computed from.\n" +
			"Without --table it lists every task's target, column count and source tables, then the tasks\n" +
			"that could not be traced. --table lists the tables upstream and downstream of one table;\n" +
			"--column follows one of its columns. SELECT * is expanded from the warehouse's catalog when\n" +
			"the warehouse answers. Results are cached in AUD_COLUMN_LINEAGE and a task is parsed again\n" +
			"only when its SELECT, target or the parser changes; --refresh parses every task again.\n" +
			"--strict exits 1 when any SQL task could not be traced.",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&f.table, "table", "", "the table to trace, schema.table or database.schema.table")
	fl.StringVar(&f.column, "column", "", "one column of --table to trace")
	fl.BoolVar(&f.upstream, "upstream", false, "only where it comes from")
	fl.BoolVar(&f.downstream, "downstream", false, "only where it goes")
	fl.IntVar(&f.depth, "depth", 0, "stop after this many steps (1 or more; default: no limit)")
	fl.BoolVar(&f.refresh, "refresh", false, "parse every task's SELECT again instead of reading the cache")
	fl.BoolVar(&f.strict, "strict", false, "exit 1 when any SQL task cannot be traced")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch {
		case f.column != "" && f.table == "":
			return usagef("--column needs --table")
		case f.upstream && f.downstream:
			return usagef("--upstream and --downstream exclude each other: leave both out for both directions")
		case cmd.Flags().Changed("depth") && f.depth < 1:
			return usagef("--depth must be 1 or more, got %d", f.depth)
		}
		s, err := a.openProject(cmd)
		if err != nil {
			return err
		}
		defer s.p.Close()
		g, err := a.buildLineage(s.ctx, s.p, f.refresh)
		if err != nil {
			return err
		}
		untraced := len(g.Untraced())
		var doc any
		switch {
		case f.table == "":
			doc = report.Lineage{Schema: report.SchemaLineage, Tasks: tasksOf(g), Parsed: g.Parsed, Cached: g.Cached, NotTraced: untraced}
		case f.column == "":
			doc = tableLineage(g, f, untraced)
		default:
			c, err := columnLineage(g, f, untraced)
			if err != nil {
				return err
			}
			doc = c
		}
		if f.strict && untraced > 0 {
			a.status = exit.Failure
		}
		if format.json() {
			return a.printJSON(doc)
		}
		switch d := doc.(type) {
		case report.Lineage:
			a.printLineage(d)
		case report.TableLineage:
			a.printTableLineage(d)
		case report.ColumnLineage:
			a.printColumnLineage(d)
		}
		if f.table != "" && untraced > 0 {
			a.printf("(%d SQL task(s) could not be traced; run lineage without --table)\n", untraced)
		}
		return nil
	}
	return cmd
}

// buildLineage works out the project's lineage with the warehouse's parser,
// expanding SELECT * from its catalog when the warehouse answers.
func (a *app) buildLineage(ctx context.Context, p *project.Project, refresh bool) (*lineage.Graph, error) {
	wopts := project.WarehouseOptions(p.Config)
	if wopts == nil || p.Warehouse == nil {
		return nil, exit.Errorf(exit.Configuration, "column lineage reads SQL with the warehouse's own parser: add a Warehouse section to %s", p.Config.Path)
	}
	opts := lineage.Options{Kind: wopts.Kind, Catalog: wopts.Catalog, ProjectDir: p.Config.ProjectDir, Refresh: refresh, Log: a.logger()}
	var w warehouse.Warehouse
	if got, release, err := p.Warehouse.Acquire(ctx); err != nil {
		a.logger().Warn("the warehouse cannot be opened: SELECT * over its tables is not traced", "error", err)
	} else {
		defer release()
		w = got
	}
	return lineage.Build(ctx, p.DB, w, opts)
}

// tasksOf returns the tasks the lineage lists: those that write or read a
// table, or could not be traced.
func tasksOf(g *lineage.Graph) []report.LineageTask {
	out := []report.LineageTask{}
	for _, t := range g.Tasks {
		if t.Target != "" || len(t.Reads) > 0 || t.Error != "" {
			out = append(out, *t)
		}
	}
	return out
}

// tableLineage is the --table document.
func tableLineage(g *lineage.Graph, f lineageFlags, untraced int) report.TableLineage {
	table := g.TableName(f.table)
	doc := report.TableLineage{Schema: report.SchemaTableLineage, Table: table, NotTraced: untraced}
	if !f.downstream {
		doc.Upstream = nonNilSteps(g.UpstreamTables(table, f.depth))
	}
	if !f.upstream {
		doc.Downstream = nonNilSteps(g.DownstreamTables(table, f.depth))
	}
	return doc
}

// columnLineage is the --column document; a column no lineage mentions is
// a usage error listing the table's traced columns.
func columnLineage(g *lineage.Graph, f lineageFlags, untraced int) (report.ColumnLineage, error) {
	table, column := g.TableName(f.table), strings.ToLower(f.column)
	known := g.Columns(table)
	if !slices.Contains(known, column) {
		hint := "; no column of it is traced"
		if len(known) > 0 {
			hint = "; its traced columns: " + strings.Join(known, ", ")
		}
		return report.ColumnLineage{}, usagef("no lineage mentions %s.%s%s", table, column, hint)
	}
	doc := report.ColumnLineage{Schema: report.SchemaColumnLineage, Table: table, Column: column, NotTraced: untraced}
	if !f.downstream {
		doc.Upstream = nonNilSteps(g.Upstream(table, column, f.depth))
	}
	if !f.upstream {
		doc.Downstream = nonNilSteps(g.Downstream(table, column, f.depth))
	}
	return doc, nil
}

// nonNilSteps makes an empty walk an empty list, so JSON tells it from a
// direction not asked for (null).
func nonNilSteps[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printLineage writes every task's target, column count and source tables,
// then the tasks that could not be traced.
func (a *app) printLineage(d report.Lineage) {
	t := newTable("TASK", "TARGET", "COLUMNS", "SOURCE_TABLES")
	for _, task := range d.Tasks {
		if task.Error == "" {
			t.add(task.Task, task.Target, len(task.Columns), strings.Join(task.Reads, ", "))
		}
	}
	if len(d.Tasks) == 0 {
		a.printTable(t, "no active SQL tasks")
		return
	}
	if len(t.rows) > 0 {
		a.printTable(t, "")
	}
	for _, task := range d.Tasks {
		if task.Error != "" {
			a.printf("not traced: %s: %s\n", task.Task, task.Error)
		}
	}
}

// printTableLineage writes the table, then its upstream and downstream
// tables, two spaces more per level.
func (a *app) printTableLineage(d report.TableLineage) {
	a.printf("%s\n", d.Table)
	for _, dir := range []struct {
		title string
		steps []report.LineageTableStep
	}{{"upstream", d.Upstream}, {"downstream", d.Downstream}} {
		if dir.steps == nil {
			continue
		}
		a.printf("  %s:\n", dir.title)
		if len(dir.steps) == 0 {
			a.printf("    (none)\n")
		}
		for _, s := range dir.steps {
			a.printf("    %s%s  (%s)\n", strings.Repeat("  ", s.Level-1), s.Table, s.Task)
		}
	}
}

// printColumnLineage writes the column, then a line per edge: <- source
// upstream, -> target downstream, two spaces more per level.
func (a *app) printColumnLineage(d report.ColumnLineage) {
	a.printf("%s.%s\n", d.Table, d.Column)
	for _, s := range d.Upstream {
		source := "(no source)"
		if s.SourceTable != "" {
			source = s.SourceTable + "." + s.SourceColumn
		}
		a.printf("  %s<- %s  [%s]  (%s)\n", strings.Repeat("  ", s.Level-1), source, s.Transformation, s.Task)
	}
	for _, s := range d.Downstream {
		a.printf("  %s-> %s.%s  [%s]  (%s)\n", strings.Repeat("  ", s.Level-1), s.TargetTable, s.TargetColumn, s.Transformation, s.Task)
	}
}
