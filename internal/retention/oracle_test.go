package retention_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/retention"
)

// The test's own model of what a purge keeps, written from the rules of
// docs/retention.md in Go, apart from the SQL that implements them: state
// reads every row a purge decides about, and expected says which of them
// stay.

// state is the rows of the tables a purge deletes from, each by its key
// (a gate wait by "run|task"), with what the rules read.
type state struct {
	runs          map[int64]runRow
	taskRuns      map[int64]taskRunRow
	attempts      map[int64]attemptRow
	ruleRuns      map[int64]int64 // rule run -> task run
	results       map[int64]resultRow
	decisions     map[int64]refRow
	consumption   map[int64]refRow
	gateWaits     map[string]int64 // "run|task" -> run
	interventions map[int64]interventionRow
	actions       map[int64]stampRow
	changes       map[int64]changeRow
	files         map[string]time.Time // attempt log file -> last written
}

type runRow struct {
	pipeline        int64
	status, trigger string
	key             string
	end             *time.Time
	backfill, ended bool
	taskRuns        []int64
}

type taskRunRow struct {
	run, task int64
	ended     bool
}

type attemptRow struct {
	taskRun int64
	log     string
}

type resultRow struct {
	ruleRun int64
	active  bool
}

// refRow is a gate decision or consumption row: its run (0 for none), the
// runs it refers to, and the dependency it is of.
type refRow struct {
	run       int64
	refs      []int64
	pipeDep   int64
	taskDep   int64
	consumedT int64
}

type interventionRow struct {
	run      int64
	schedule bool
	at       time.Time
}

type stampRow struct {
	run int64
	at  time.Time
}

type changeRow struct {
	row string
	at  time.Time
}

// read reads the state of db, and the log files under logDir.
func read(t *testing.T, db *engine.DB, logDir string) state {
	t.Helper()
	s := state{runs: map[int64]runRow{}, taskRuns: map[int64]taskRunRow{}, attempts: map[int64]attemptRow{},
		ruleRuns: map[int64]int64{}, results: map[int64]resultRow{}, decisions: map[int64]refRow{}, consumption: map[int64]refRow{},
		gateWaits: map[string]int64{}, interventions: map[int64]interventionRow{}, actions: map[int64]stampRow{},
		changes: map[int64]changeRow{}, files: map[string]time.Time{}}
	scan(t, db, "SELECT PIPELINE_RUN_ID, PIPELINE_ID, STATUS, TRIGGER_KIND, RUN_KEY, END_DATE, BACKFILL FROM AUD_PIPELINES_RUN_LOG", func(sc func(...any)) {
		var id int64
		var r runRow
		var end engine.Time
		var backfill string
		sc(&id, &r.pipeline, &r.status, &r.trigger, &r.key, &end, &backfill)
		if end.Valid {
			e := end.Time
			r.end = &e
		}
		r.backfill = backfill == "Y"
		r.ended = r.status != "QUEUED" && r.status != "IN-PROGRESS"
		s.runs[id] = r
	})
	scan(t, db, "SELECT TASK_RUN_ID, PIPELINE_RUN_ID, TASK_ID, STATUS FROM AUD_TASK_RUN_LOG", func(sc func(...any)) {
		var id int64
		var r taskRunRow
		var status string
		sc(&id, &r.run, &r.task, &status)
		r.ended = status != "IN-PROGRESS"
		s.taskRuns[id] = r
		run := s.runs[r.run]
		run.taskRuns = append(run.taskRuns, id)
		s.runs[r.run] = run
	})
	scan(t, db, "SELECT ATTEMPT_ID, TASK_RUN_ID, coalesce(LOG_PATH, '') FROM AUD_TASK_ATTEMPTS", func(sc func(...any)) {
		var id int64
		var a attemptRow
		sc(&id, &a.taskRun, &a.log)
		s.attempts[id] = a
	})
	scan(t, db, "SELECT BUSINESS_RULE_RUN_ID, TASK_RUN_ID FROM AUD_BUSINESS_RULES_RUN_LOG", func(sc func(...any)) {
		var id, tr int64
		sc(&id, &tr)
		s.ruleRuns[id] = tr
	})
	scan(t, db, "SELECT BUSINESS_RULE_RESULT_ID, BUSINESS_RULE_RUN_ID, ACTIVE_FLAG FROM AUD_BUSINESS_RULES_RESULTS", func(sc func(...any)) {
		var id int64
		var r resultRow
		var flag string
		sc(&id, &r.ruleRun, &flag)
		r.active = flag == "Y"
		s.results[id] = r
	})
	runOfTask := func(tr sql.NullInt64) int64 {
		if !tr.Valid {
			return 0
		}
		return s.taskRuns[tr.Int64].run
	}
	scan(t, db, "SELECT DECISION_ID, PIPELINE_RUN_ID, ATTEMPT_ID, SELECTED_PIPELINE_RUN_ID, SELECTED_TASK_RUN_ID FROM AUD_GATE_DECISIONS", func(sc func(...any)) {
		var id, run int64
		var attempt, sel, selTask sql.NullInt64
		sc(&id, &run, &attempt, &sel, &selTask)
		r := refRow{run: run}
		if attempt.Valid {
			r.refs = append(r.refs, s.taskRuns[s.attempts[attempt.Int64].taskRun].run)
		}
		if sel.Valid {
			r.refs = append(r.refs, sel.Int64)
		}
		if selTask.Valid {
			r.refs = append(r.refs, runOfTask(selTask))
		}
		s.decisions[id] = r
	})
	scan(t, db, `SELECT CONSUMPTION_ID, PIPELINE_RUN_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID
		FROM AUD_DEPENDENCY_CONSUMPTION`, func(sc func(...any)) {
		var id, consumed int64
		var run, task, pd, td sql.NullInt64
		sc(&id, &run, &consumed, &task, &pd, &td)
		r := refRow{run: run.Int64, refs: []int64{consumed}, pipeDep: pd.Int64, taskDep: td.Int64}
		if task.Valid {
			r.refs = append(r.refs, runOfTask(task))
		}
		s.consumption[id] = r
	})
	scan(t, db, "SELECT PIPELINE_RUN_ID, coalesce(TASK_ID, 0) FROM AUD_GATE_WAITS", func(sc func(...any)) {
		var run, task int64
		sc(&run, &task)
		s.gateWaits[fmt.Sprintf("%d|%d", run, task)] = run
	})
	scan(t, db, "SELECT INTERVENTION_ID, PIPELINE_RUN_ID, ACTION, coalesce(REQUESTED_BY_KIND, ''), REQUESTED_AT FROM AUD_RUN_INTERVENTIONS", func(sc func(...any)) {
		var id int64
		var i interventionRow
		var action, kind string
		var at engine.Time
		sc(&id, &i.run, &action, &kind, &at)
		i.schedule, i.at = action == "NEW_RUN" && kind == "SCHEDULE", at.Time
		s.interventions[id] = i
	})
	scan(t, db, "SELECT ACTION_ID, coalesce(PIPELINE_RUN_ID, 0), STARTED_AT FROM AUD_ACTIONS", func(sc func(...any)) {
		var id int64
		var a stampRow
		var at engine.Time
		sc(&id, &a.run, &at)
		a.at = at.Time
		s.actions[id] = a
	})
	scan(t, db, "SELECT CHANGE_ID, TABLE_NAME, ROW_KEY, CHANGED_AT FROM AUD_METADATA_CHANGES", func(sc func(...any)) {
		var id int64
		var c changeRow
		var table, key string
		var at engine.Time
		sc(&id, &table, &key, &at)
		c.row, c.at = table+"|"+key, at.Time
		s.changes[id] = c
	})
	if logDir != "" {
		filepath.WalkDir(logDir, func(path string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				info, _ := e.Info()
				s.files[path] = info.ModTime()
			}
			return nil
		})
	}
	return s
}

// scan runs a query and calls row with each row's scanner.
func scan(t *testing.T, db *engine.DB, q string, row func(scan func(dest ...any))) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		row(func(dest ...any) {
			if err := rows.Scan(dest...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		})
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// before is a cut-off test: whether at is before the kind's cut-off (false
// for a kind kept forever).
func before(cutoffs map[retention.Kind]time.Time, k retention.Kind, at time.Time) bool {
	c, ok := cutoffs[k]
	return ok && at.Before(c)
}

// goingRuns is the model's set of runs a purge with the cut-offs deletes.
func (s state) goingRuns(cutoffs map[retention.Kind]time.Time) map[int64]bool {
	going := map[int64]bool{}
	for id, r := range s.runs {
		if r.ended && r.end != nil && before(cutoffs, retention.Runs, *r.end) {
			going[id] = true
		}
	}
	keep := func(id int64) { delete(going, id) }
	latest := map[[2]int64]int64{} // pipeline, backfills counted (0) or not (1) -> run
	schedule := map[int64]string{}
	for id, r := range s.runs {
		if r.ended {
			latest[[2]int64{r.pipeline, 0}] = max(latest[[2]int64{r.pipeline, 0}], id)
			if !r.backfill {
				latest[[2]int64{r.pipeline, 1}] = max(latest[[2]int64{r.pipeline, 1}], id)
			}
		}
		if r.trigger == "SCHEDULE" && r.key > schedule[r.pipeline] {
			schedule[r.pipeline] = r.key
		}
	}
	for id, r := range s.runs {
		if latest[[2]int64{r.pipeline, 0}] == id || (!r.backfill && latest[[2]int64{r.pipeline, 1}] == id) ||
			(r.trigger == "SCHEDULE" && schedule[r.pipeline] == r.key) {
			keep(id)
		}
	}
	latestTask := map[int64]int64{}
	for id, tr := range s.taskRuns {
		if tr.ended && !s.runs[tr.run].backfill {
			latestTask[tr.task] = max(latestTask[tr.task], id)
		}
	}
	for _, id := range latestTask {
		keep(s.taskRuns[id].run)
	}
	for _, i := range s.interventions {
		if !i.schedule && !before(cutoffs, retention.Interventions, i.at) {
			keep(i.run)
		}
	}
	for _, a := range s.actions {
		if a.run != 0 && !before(cutoffs, retention.Actions, a.at) {
			keep(a.run)
		}
	}
	for _, r := range s.results {
		if r.active {
			keep(s.taskRuns[s.ruleRuns[r.ruleRun]].run)
		}
	}
	lastOf := map[[2]int64]int64{}
	for id, c := range s.consumption {
		if c.pipeDep != 0 {
			lastOf[[2]int64{0, c.pipeDep}] = max(lastOf[[2]int64{0, c.pipeDep}], id)
		}
		if c.taskDep != 0 {
			lastOf[[2]int64{1, c.taskDep}] = max(lastOf[[2]int64{1, c.taskDep}], id)
		}
	}
	for _, id := range lastOf {
		c := s.consumption[id]
		keep(c.run)
		for _, r := range c.refs {
			keep(r)
		}
	}
	// What a staying row refers to stays, and then what its rows refer to.
	for changed := true; changed; {
		changed = false
		for _, rows := range []map[int64]refRow{s.decisions, s.consumption} {
			for _, r := range rows {
				if going[r.run] {
					continue
				}
				for _, to := range r.refs {
					if going[to] {
						keep(to)
						changed = true
					}
				}
			}
		}
	}
	return going
}

// expected is the model's state after a purge with the cut-offs.
func (s state) expected(cutoffs map[retention.Kind]time.Time, logDir string) state {
	going := s.goingRuns(cutoffs)
	out := read0()
	for id, r := range s.runs {
		if !going[id] {
			out.runs[id] = r
		}
	}
	goingTask := map[int64]bool{}
	for id, tr := range s.taskRuns {
		if going[tr.run] {
			goingTask[id] = true
		} else {
			out.taskRuns[id] = tr
		}
	}
	goingFiles := map[string]bool{}
	for id, a := range s.attempts {
		if goingTask[a.taskRun] {
			goingFiles[a.log] = true
		} else {
			out.attempts[id] = a
		}
	}
	for id, tr := range s.ruleRuns {
		if !goingTask[tr] {
			out.ruleRuns[id] = tr
		}
	}
	for id, r := range s.results {
		if !goingTask[s.ruleRuns[r.ruleRun]] {
			out.results[id] = r
		}
	}
	for id, d := range s.decisions {
		if !going[d.run] {
			out.decisions[id] = d
		}
	}
	for id, c := range s.consumption {
		if !going[c.run] {
			out.consumption[id] = c
		}
	}
	for k, run := range s.gateWaits {
		if !going[run] {
			out.gateWaits[k] = run
		}
	}
	for id, i := range s.interventions {
		if !going[i.run] && !before(cutoffs, retention.Interventions, i.at) {
			out.interventions[id] = i
		}
	}
	for id, a := range s.actions {
		if !before(cutoffs, retention.Actions, a.at) {
			out.actions[id] = a
		}
	}
	latest := map[string]int64{}
	for id, c := range s.changes {
		latest[c.row] = max(latest[c.row], id)
	}
	for id, c := range s.changes {
		if latest[c.row] == id || !before(cutoffs, retention.MetadataChanges, c.at) {
			out.changes[id] = c
		}
	}
	keepsLogs := map[int64]bool{}
	latestRun := map[int64]int64{}
	for id, r := range s.runs {
		if !r.ended {
			keepsLogs[id] = true
		} else {
			latestRun[r.pipeline] = max(latestRun[r.pipeline], id)
		}
	}
	for _, id := range latestRun {
		keepsLogs[id] = true
	}
	folder := regexp.MustCompile(`run-([0-9]+)$`)
	for f, at := range s.files {
		m := folder.FindStringSubmatch(filepath.Dir(f))
		run, _ := strconv.ParseInt(m[1], 10, 64)
		if goingFiles[f] || (before(cutoffs, retention.Logs, at) && !keepsLogs[run]) {
			continue
		}
		out.files[f] = at
	}
	return out
}

// read0 is an empty state.
func read0() state {
	return state{runs: map[int64]runRow{}, taskRuns: map[int64]taskRunRow{}, attempts: map[int64]attemptRow{},
		ruleRuns: map[int64]int64{}, results: map[int64]resultRow{}, decisions: map[int64]refRow{}, consumption: map[int64]refRow{},
		gateWaits: map[string]int64{}, interventions: map[int64]interventionRow{}, actions: map[int64]stampRow{},
		changes: map[int64]changeRow{}, files: map[string]time.Time{}}
}

// keys lists the keys of each table of a state, as the archive names its
// rows: the first column's value (a gate wait's run and task).
func (s state) keys() map[string][]string {
	out := map[string][]string{}
	add := func(table string, k any) { out[table] = append(out[table], fmt.Sprint(k)) }
	for id := range s.runs {
		add("AUD_PIPELINES_RUN_LOG", id)
	}
	for id := range s.taskRuns {
		add("AUD_TASK_RUN_LOG", id)
	}
	for id := range s.attempts {
		add("AUD_TASK_ATTEMPTS", id)
	}
	for id := range s.ruleRuns {
		add("AUD_BUSINESS_RULES_RUN_LOG", id)
	}
	for id := range s.results {
		add("AUD_BUSINESS_RULES_RESULTS", id)
	}
	for id := range s.decisions {
		add("AUD_GATE_DECISIONS", id)
	}
	for id := range s.consumption {
		add("AUD_DEPENDENCY_CONSUMPTION", id)
	}
	for k := range s.gateWaits {
		add("AUD_GATE_WAITS", k)
	}
	for id := range s.interventions {
		add("AUD_RUN_INTERVENTIONS", id)
	}
	for id := range s.actions {
		add("AUD_ACTIONS", id)
	}
	for id := range s.changes {
		add("AUD_METADATA_CHANGES", id)
	}
	for f := range s.files {
		add("log files", f)
	}
	for _, k := range out {
		slices.Sort(k)
	}
	return out
}

// minus returns the keys of a that b lacks, per table.
func minus(a, b map[string][]string) map[string][]string {
	out := map[string][]string{}
	for table, keys := range a {
		for _, k := range keys {
			if _, found := slices.BinarySearch(b[table], k); !found {
				out[table] = append(out[table], k)
			}
		}
	}
	return out
}
