package retention

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// What may go, as SQL. A query is built with an args list: each bound
// value is added once and named by its $N, which may appear more than once
// (both dialects number their parameters).

// args are a query's bound values.
type args []any

// add binds v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// list binds the ids and returns the condition "IN ($i, …)".
func (a *args) list(ids []int64) string {
	marks := make([]string, len(ids))
	for i, id := range ids {
		marks[i] = a.add(id)
	}
	return "IN (" + strings.Join(marks, ", ") + ")"
}

// table is a table a purge deletes from, and its key: its one primary-key
// column, "" for a table without one.
type table struct {
	name, key string
}

// unitTable is a table holding rows that belong to runs: what a run's unit
// deletes from it. Its rows name their run directly (parent nil), or
// through the parent row that ref names.
type unitTable struct {
	table
	parent *unitTable
	ref    string
	// file is the column naming a file that goes with the row: the
	// attempt's log.
	file string
}

// The tables of a run's unit.
var (
	runsTable     = &unitTable{table: table{"AUD_PIPELINES_RUN_LOG", "PIPELINE_RUN_ID"}}
	taskRunsTable = &unitTable{table: table{"AUD_TASK_RUN_LOG", "TASK_RUN_ID"}}
	ruleRunsTable = &unitTable{table: table{"AUD_BUSINESS_RULES_RUN_LOG", "BUSINESS_RULE_RUN_ID"}, parent: taskRunsTable, ref: "TASK_RUN_ID"}
	attemptsTable = &unitTable{table: table{"AUD_TASK_ATTEMPTS", "ATTEMPT_ID"}, parent: taskRunsTable, ref: "TASK_RUN_ID", file: "LOG_PATH"}
)

// unitTables are the tables of a run's unit, in the order a batch deletes
// from them: a row before the rows it refers to.
var unitTables = []*unitTable{
	{table: table{"AUD_GATE_DECISIONS", "DECISION_ID"}},
	{table: table{"AUD_DEPENDENCY_CONSUMPTION", "CONSUMPTION_ID"}},
	{table: table{"AUD_BUSINESS_RULES_RESULTS", "BUSINESS_RULE_RESULT_ID"}, parent: ruleRunsTable, ref: "BUSINESS_RULE_RUN_ID"},
	ruleRunsTable,
	attemptsTable,
	{table: table{"AUD_GATE_WAITS", ""}},
	{table: table{"AUD_RUN_INTERVENTIONS", "INTERVENTION_ID"}},
	taskRunsTable,
	runsTable,
}

// members is the condition on the table's own columns selecting the rows
// of the runs whose ids satisfy runs ("IN (…)").
func (u *unitTable) members(runs string) string {
	if u.parent == nil {
		return "PIPELINE_RUN_ID " + runs
	}
	return u.ref + " IN (SELECT " + u.parent.key + " FROM " + u.parent.name + " WHERE " + u.parent.members(runs) + ")"
}

// countsQuery selects, per run whose id satisfies runs, how many rows of the
// table it has.
func (u *unitTable) countsQuery(runs string) string {
	from, run := u.name+" x0", "x0.PIPELINE_RUN_ID"
	alias := "x0"
	for i, t := 1, u; t.parent != nil; i, t = i+1, t.parent {
		next := "x" + strconv.Itoa(i)
		from += " JOIN " + t.parent.name + " " + next + " ON " + next + "." + t.parent.key + " = " + alias + "." + t.ref
		alias, run = next, next+".PIPELINE_RUN_ID"
	}
	return "SELECT " + run + ", count(*) FROM " + from + " WHERE " + run + " " + runs + " GROUP BY " + run
}

// standalone is a table whose old rows a purge deletes on their own, by
// their kind's retention: rows that belong to no planned run.
type standalone struct {
	table
	kind Kind
	// at is the column of the row's moment; run the column naming the row's
	// run, "" when it names none a purge minds.
	at, run string
}

// standalones are the tables of rows deleted on their own, in the order a
// purge deletes them (before the runs, which their rows may name). An old
// intervention of a run whose unit goes goes with the unit.
var standalones = []standalone{
	{table{"AUD_ACTIONS", "ACTION_ID"}, Actions, "STARTED_AT", ""},
	{table{"AUD_METADATA_CHANGES", "CHANGE_ID"}, MetadataChanges, "CHANGED_AT", ""},
	{table{"AUD_RUN_INTERVENTIONS", "INTERVENTION_ID"}, Interventions, "REQUESTED_AT", "PIPELINE_RUN_ID"},
}

// scheduleNote is the condition on an intervention i that it is the note a
// schedule tick made with its run: part of the run, not an operator's
// change, which goes with the run whatever the interventions' retention.
var scheduleNote = "(i.ACTION = " + records.SQL(records.InterventionNewRun) +
	" AND i.REQUESTED_BY_KIND = '" + string(actor.Schedule) + "')"

// oldRuns is the condition on a run r that it ended before the runs'
// cut-off ($ of at).
func oldRuns(a *args, at any) string {
	return "r.STATUS IN (" + records.SQLEndedRuns + ") AND r.END_DATE IS NOT NULL AND r.END_DATE < " + a.add(at)
}

// rules are the cut-offs the conditions on rows are built with, bound as
// the Engine DB binds times; nil where a kind is kept forever.
type rules struct {
	db      *engine.DB
	cutoffs map[Kind]time.Time
}

// bind binds a kind's cut-off, "" when it is kept forever.
func (r rules) bind(a *args, k Kind) string {
	at, ok := r.cutoffs[k]
	if !ok {
		return ""
	}
	return a.add(r.db.TimeArg(at))
}

// protections selects, each in its own query, the runs among those whose
// ids satisfy runs ("IN (…)") that must stay, whatever their age: a run
// that is its pipeline's latest ended run (also among the runs that are no
// backfills), or its latest scheduled run (from which the schedule plans);
// one that holds a task's latest ended task run; one a kept intervention or
// action names; one a business rule's flag of which is still active; one
// that made the latest consumption of a dependency (what the dependency
// consumed last, which the run it consumed stays for, as every run a
// staying row refers to does: see referencesQuery). A query may select
// other runs too, and NULLs.
//
// Each is a set query, not a condition on each run: the "latest" of a
// pipeline, task or dependency is looked up once per pipeline, task or
// dependency of the runs (an index probe each), so that planning a purge of
// hundreds of thousands of runs reads each table about once, and a batch's
// check of its runs reads only theirs.
func (r rules) protections() []func(a *args, runs string) string {
	return []func(a *args, runs string) string{
		func(_ *args, runs string) string { return latestRun("l.STATUS IN ("+records.SQLEndedRuns+")", runs) },
		func(_ *args, runs string) string {
			return latestRun("l.STATUS IN ("+records.SQLEndedRuns+") AND l.BACKFILL = 'N'", runs)
		},
		func(_ *args, runs string) string {
			return "SELECT n.PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG n WHERE n.TRIGGER_KIND = " + records.SQL(records.TriggerSchedule) +
				" AND (n.PIPELINE_ID, n.RUN_KEY) IN (SELECT p.PIPELINE_ID, (SELECT max(l.RUN_KEY) FROM AUD_PIPELINES_RUN_LOG l" +
				" WHERE l.PIPELINE_ID = p.PIPELINE_ID AND l.TRIGGER_KIND = " + records.SQL(records.TriggerSchedule) + ")" +
				" FROM (SELECT DISTINCT PIPELINE_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID " + runs + ") p)"
		},
		func(_ *args, runs string) string {
			return "SELECT t.PIPELINE_RUN_ID FROM AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID IN (SELECT (SELECT l.TASK_RUN_ID FROM AUD_TASK_RUN_LOG l" +
				" JOIN AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID WHERE l.TASK_ID = k.TASK_ID" +
				" AND l.STATUS IN (" + records.SQLEndedTasks + ") AND lr.BACKFILL = 'N' ORDER BY l.TASK_RUN_ID DESC LIMIT 1)" +
				" FROM (SELECT DISTINCT TASK_ID FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID " + runs + ") k)"
		},
		func(a *args, runs string) string {
			return "SELECT i.PIPELINE_RUN_ID FROM AUD_RUN_INTERVENTIONS i WHERE i.PIPELINE_RUN_ID " + runs + " AND NOT " + scheduleNote + r.since(a, Interventions, "i.REQUESTED_AT")
		},
		func(a *args, runs string) string {
			return "SELECT x.PIPELINE_RUN_ID FROM AUD_ACTIONS x WHERE x.PIPELINE_RUN_ID " + runs + r.since(a, Actions, "x.STARTED_AT")
		},
		func(_ *args, runs string) string {
			return "SELECT t.PIPELINE_RUN_ID FROM AUD_BUSINESS_RULES_RESULTS f JOIN AUD_BUSINESS_RULES_RUN_LOG fr ON fr.BUSINESS_RULE_RUN_ID = f.BUSINESS_RULE_RUN_ID" +
				" JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = fr.TASK_RUN_ID WHERE t.PIPELINE_RUN_ID " + runs + " AND f.ACTIVE_FLAG = 'Y'"
		},
		func(_ *args, runs string) string {
			return "SELECT c.PIPELINE_RUN_ID FROM AUD_DEPENDENCY_CONSUMPTION c WHERE c.PIPELINE_RUN_ID " + runs + " AND " + latestConsumption
		},
	}
}

// latestRun selects, for each pipeline of the runs whose ids satisfy runs,
// its latest run (by id) satisfying cond on l; NULL for a pipeline with none.
func latestRun(cond, runs string) string {
	return "SELECT (SELECT l.PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG l WHERE l.PIPELINE_ID = p.PIPELINE_ID AND " + cond +
		" ORDER BY l.PIPELINE_RUN_ID DESC LIMIT 1) FROM (SELECT DISTINCT PIPELINE_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID " + runs + ") p"
}

// latestEnded is the condition on a run r that no later run of its
// pipeline has ended: it is the latest ended run, if it ended.
var latestEnded = "NOT EXISTS (SELECT 1 FROM AUD_PIPELINES_RUN_LOG n WHERE n.PIPELINE_ID = r.PIPELINE_ID" +
	" AND n.PIPELINE_RUN_ID > r.PIPELINE_RUN_ID AND n.STATUS IN (" + records.SQLEndedRuns + "))"

// since is " AND <column> >= <cut-off>" for a kind kept for a time, "" for
// one kept forever (whose every row is kept).
func (r rules) since(a *args, k Kind, column string) string {
	at := r.bind(a, k)
	if at == "" {
		return ""
	}
	return " AND " + column + " >= " + at
}

// latestConsumption is the condition on a consumption row c that it is its
// dependency's latest: what the dependency consumed last.
const latestConsumption = "NOT EXISTS (SELECT 1 FROM AUD_DEPENDENCY_CONSUMPTION n" +
	" WHERE n.PIPELINE_DEPENDENCY_ID = c.PIPELINE_DEPENDENCY_ID AND n.CONSUMPTION_ID > c.CONSUMPTION_ID)" +
	" AND NOT EXISTS (SELECT 1 FROM AUD_DEPENDENCY_CONSUMPTION n" +
	" WHERE n.TASK_DEPENDENCY_ID = c.TASK_DEPENDENCY_ID AND n.CONSUMPTION_ID > c.CONSUMPTION_ID)"

// oldRunIDs is the condition "IN (…)" on a run id that it is of a run ended
// before the runs' cut-off, among those whose ids satisfy runs ("" for
// every run).
func (r rules) oldRunIDs(a *args, runs string) string {
	q := "IN (SELECT r.PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG r WHERE "
	if runs != "" {
		q += "r.PIPELINE_RUN_ID " + runs + " AND "
	}
	return q + oldRuns(a, r.db.TimeArg(r.cutoffs[Runs])) + ")"
}

// purgeable returns the id and end of every run that may go, among the
// runs ids (nil: every run): ended before the runs' cut-off, and not
// protected. It reads the old runs, then the protected ones among them (a
// query per protection), and takes the second from the first.
func (r rules) purgeable(ctx context.Context, q querier, ids []int64) (map[int64]time.Time, error) {
	old := func(a *args) string {
		list := ""
		if ids != nil {
			list = a.list(ids)
		}
		return r.oldRunIDs(a, list)
	}
	var a args
	out := map[int64]time.Time{}
	err := each(ctx, q, "SELECT r.PIPELINE_RUN_ID, r.END_DATE FROM AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID "+old(&a), a, func(rows *sql.Rows) error {
		var id int64
		var end engine.Time
		if err := rows.Scan(&id, &end); err != nil {
			return err
		}
		out[id] = end.Time
		return nil
	})
	if err != nil || len(out) == 0 {
		return out, err
	}
	for _, protection := range r.protections() {
		var a args
		query := protection(&a, old(&a))
		err := each(ctx, q, query, a, func(rows *sql.Rows) error {
			var id sql.NullInt64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			delete(out, id.Int64)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// querier is what a query runs in: a snapshot or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// each runs a query and calls row (when set) with each of its rows.
func each(ctx context.Context, q querier, query string, a args, row func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, a...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if row != nil {
			if err := row(rows); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}

// referencesQuery selects the references a gate decision or a consumption
// row makes from its run (NULL for a consumption row of no run) to another
// run whose id satisfies runs: the run it selected or consumed, the run of
// the task run it selected or consumed, the run of the attempt it judged.
// A run referred to by a kept row must stay.
func referencesQuery(runs string) string {
	return "SELECT d.PIPELINE_RUN_ID, d.SELECTED_PIPELINE_RUN_ID FROM AUD_GATE_DECISIONS d WHERE d.SELECTED_PIPELINE_RUN_ID " + runs +
		"\nUNION ALL SELECT d.PIPELINE_RUN_ID, t.PIPELINE_RUN_ID FROM AUD_GATE_DECISIONS d JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = d.SELECTED_TASK_RUN_ID" +
		" WHERE t.PIPELINE_RUN_ID " + runs +
		"\nUNION ALL SELECT d.PIPELINE_RUN_ID, t.PIPELINE_RUN_ID FROM AUD_GATE_DECISIONS d JOIN AUD_TASK_ATTEMPTS x ON x.ATTEMPT_ID = d.ATTEMPT_ID" +
		" JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = x.TASK_RUN_ID WHERE t.PIPELINE_RUN_ID " + runs +
		"\nUNION ALL SELECT c.PIPELINE_RUN_ID, c.CONSUMED_PIPELINE_RUN_ID FROM AUD_DEPENDENCY_CONSUMPTION c WHERE c.CONSUMED_PIPELINE_RUN_ID " + runs +
		"\nUNION ALL SELECT c.PIPELINE_RUN_ID, t.PIPELINE_RUN_ID FROM AUD_DEPENDENCY_CONSUMPTION c JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = c.CONSUMED_TASK_RUN_ID" +
		" WHERE t.PIPELINE_RUN_ID " + runs
}

// standaloneQuery selects the id and run (NULL when the table names none)
// of the table's rows older than its kind's cut-off, oldest first; for
// metadata changes, not the latest change of their row, which stays.
func (r rules) standaloneQuery(a *args, s standalone) string {
	run := "CAST(NULL AS BIGINT)"
	if s.run != "" {
		run = "m." + s.run
	}
	q := "SELECT m." + s.key + ", " + run + " FROM " + s.name + " m WHERE m." + s.at + " < " + r.bind(a, s.kind)
	if s.kind == MetadataChanges {
		q += " AND EXISTS (SELECT 1 FROM AUD_METADATA_CHANGES n WHERE n.TABLE_NAME = m.TABLE_NAME AND n.ROW_KEY = m.ROW_KEY AND n.CHANGE_ID > m.CHANGE_ID)"
	}
	return q + " ORDER BY m." + s.key
}
