package retention_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// history writes random days of history into an Engine DB, each at a
// simulated moment: runs of a few pipelines (scheduled with their notes,
// manual, backfills, some never ending), their task runs and attempts
// with log files, retries, reopened runs, gate decisions and consumption
// of an upstream's runs, business-rule runs and flags, gate waits,
// operator interventions, actions and metadata changes.
type history struct {
	t      testing.TB
	db     *engine.DB
	rnd    *rand.Rand
	logDir string
	ctx    context.Context
	// pipelines are P1 … Pn; P2 depends on P1 (its task check on P1's
	// load); rule is the business rule of P1's check.
	pipelines []pipelineIDs
	pipeDep   int64
	taskDep   int64
	rule      int64
	keys      int // schedule run keys made so far
	// mode is how P3 runs for a while: not at all (0), by hand with its
	// check (1), or on its schedule without it (2).
	mode int
	// hungry says P2's runs consume what P1 made, for a while.
	hungry bool
}

type pipelineIDs struct {
	id          int64
	code        string
	load, check int64
}

// newHistory registers the pipelines; attempt logs go under logDir.
func newHistory(t testing.TB, db *engine.DB, seed uint64, logDir string) *history {
	t.Helper()
	h := &history{t: t, db: db, rnd: rand.New(rand.NewPCG(seed, 31)), logDir: logDir,
		ctx: actor.With(context.Background(), actor.Actor{Name: "tester", Kind: actor.Human})}
	b := pipelinetest.New(t, db)
	for i := 1; i <= 3; i++ {
		code := fmt.Sprintf("P%d", i)
		p := pipelineIDs{id: b.Pipeline(code, "FULL"), code: code}
		p.load = b.Task(code, "load", "SQL", nil)
		p.check = b.Task(code, "check", "BUSINESS_RULES", nil)
		h.pipelines = append(h.pipelines, p)
	}
	h.pipeDep = b.PipelineDep("P2", "P1", "SUCCESS")
	h.taskDep = b.Dep("P2", "check", "P1", "load", "SUCCESS")
	h.exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
		BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES ('r1', $1, $2, 'SELECT 1', 'REPORT', 'k', 'main.t', 1)`,
		h.pipelines[0].id, h.pipelines[0].check)
	h.rule = h.one("SELECT max(BUSINESS_RULE_ID) FROM CFG_BUSINESS_RULES")
	return h
}

// exec runs a statement in an engine transaction.
func (h *history) exec(q string, args ...any) {
	h.t.Helper()
	err := h.db.Tx(h.ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(h.ctx, q, args...)
		return err
	})
	if err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
}

// insert runs an INSERT … RETURNING id in an engine transaction.
func (h *history) insert(q string, args ...any) int64 {
	h.t.Helper()
	var id int64
	err := h.db.Tx(h.ctx, func(tx *engine.Tx) error { return tx.QueryRowContext(h.ctx, q, args...).Scan(&id) })
	if err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	return id
}

// one reads one whole number.
func (h *history) one(q string, args ...any) int64 {
	h.t.Helper()
	var n int64
	if err := h.db.QueryRowContext(h.ctx, q, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (h *history) at(t time.Time) any { return h.db.TimeArg(t) }

// day writes a day of history ending at now.
func (h *history) day(now time.Time) {
	h.t.Helper()
	if h.rnd.IntN(20) == 0 {
		h.mode = h.rnd.IntN(3)
	}
	if h.rnd.IntN(20) == 0 {
		h.hungry = !h.hungry
	}
	for i, p := range h.pipelines {
		n := h.rnd.IntN(3)
		if i == 2 && h.mode == 0 {
			n = 0 // P3 is quiet for a while
		}
		for range n {
			h.run(p, now.Add(-time.Duration(h.rnd.IntN(20))*time.Hour))
		}
	}
	runs := h.ids("SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG")
	if len(runs) == 0 {
		return
	}
	pick := func() int64 { return runs[h.rnd.IntN(len(runs))] }
	for range h.rnd.IntN(3) {
		run := pick()
		h.exec(`INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, ACTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY, REQUESTED_AT)
			SELECT PIPELINE_ID, PIPELINE_RUN_ID, 'MARK', STATUS, STATUS, 'checked', 'tester', $2 FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1`,
			run, h.at(now))
	}
	for range 1 + h.rnd.IntN(3) {
		var run any
		if h.rnd.IntN(2) == 0 {
			run = pick()
		}
		h.exec(`INSERT INTO AUD_ACTIONS (STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, PIPELINE_RUN_ID, OUTCOME)
			VALUES ($1, $1, 'tester', 'HUMAN', 'host', 'mark', '{}', $2, 'REQUESTED')`, h.at(now), run)
	}
	for range h.rnd.IntN(4) {
		h.exec(`INSERT INTO AUD_METADATA_CHANGES (CHANGED_AT, ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, AFTER_JSON)
			VALUES ($1, 'tester', 'HUMAN', 'CFG_TASKS', $2, 'UPDATE', '{}')`, h.at(now), fmt.Sprint(h.rnd.IntN(4)))
	}
	if h.rnd.IntN(4) == 0 {
		h.reopen(now)
	}
}

// ids reads a column of whole numbers.
func (h *history) ids(q string, args ...any) []int64 {
	h.t.Helper()
	rows, err := h.db.QueryContext(h.ctx, q, args...)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// run writes a run of the pipeline ending at end, most of them ended.
func (h *history) run(p pipelineIDs, end time.Time) {
	h.t.Helper()
	start := end.Add(-time.Hour)
	status := []string{"SUCCESS", "SUCCESS", "SUCCESS", "FAILED", "SKIPPED", "CANCELLED", "IN-PROGRESS", "QUEUED"}[h.rnd.IntN(8)]
	ended := any(h.at(end))
	if status == "IN-PROGRESS" || status == "QUEUED" {
		if h.one("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS = 'IN-PROGRESS'", p.id) > 0 {
			status = "SUCCESS"
		} else {
			ended = nil
		}
	}
	trigger, key, backfill := "MANUAL", fmt.Sprintf("manual:%d", h.rnd.Int64()), "N"
	switch choice := h.rnd.IntN(4); {
	case p.code == "P3" && h.mode == 1:
	case choice < 2 || (p.code == "P3" && h.mode == 2):
		h.keys++
		trigger, key = "SCHEDULE", fmt.Sprintf("schedule:%06d", h.keys)
	case choice == 2 && h.rnd.IntN(3) == 0:
		trigger, backfill = "BACKFILL", "Y"
	}
	run := h.insert(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, START_DATE, END_DATE, BACKFILL)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING PIPELINE_RUN_ID`, p.id, status, key, trigger, h.at(start), ended, backfill)
	if trigger == "SCHEDULE" {
		h.exec(`INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, ACTION, TO_STATUS, REASON, REQUESTED_BY, REQUESTED_BY_KIND, REQUESTED_AT)
			VALUES ($1, $2, 'NEW_RUN', 'QUEUED', 'the schedule', 'schedule', 'SCHEDULE', $3)`, p.id, run, h.at(start))
	}
	if status == "QUEUED" {
		return
	}
	taskStatus := map[string]string{"SUCCESS": "SUCCESS", "FAILED": "FAILED", "SKIPPED": "SKIPPED", "CANCELLED": "CANCELLED", "IN-PROGRESS": "IN-PROGRESS"}[status]
	tasks := []int64{p.load, p.check}
	switch {
	case status == "SKIPPED" && h.rnd.IntN(2) == 0:
		tasks = nil // skipped on purpose: no task ran
	case p.code == "P3" && h.mode == 2:
		tasks = tasks[:1]
	}
	for _, task := range tasks {
		var taskEnd any
		if taskStatus != "IN-PROGRESS" {
			taskEnd = h.at(end)
		}
		tr := h.insert(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, START_DATE, END_DATE)
			VALUES ($1, $2, $3, $4, $5) RETURNING TASK_RUN_ID`, task, run, taskStatus, h.at(start), taskEnd)
		attempts := 1 + h.rnd.IntN(2)
		for n := 1; n <= attempts; n++ {
			a := "FAILED"
			if n == attempts {
				a = map[string]string{"SUCCESS": "SUCCESS", "FAILED": "FAILED", "SKIPPED": "CANCELLED", "CANCELLED": "CANCELLED", "IN-PROGRESS": "RUNNING"}[status]
			}
			path := filepath.Join(h.logDir, p.code, fmt.Sprintf("run-%d", run), fmt.Sprintf("t%d.attempt-%d.log", task, n))
			attempt := h.insert(`INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, ENDED_AT, LOG_PATH)
				VALUES ($1, $2, $3, $4, $5, $6) RETURNING ATTEMPT_ID`, tr, n, a, h.at(start), taskEnd, path)
			h.logFile(path, end)
			if p.id == h.pipelines[1].id && task == p.check && n == 1 {
				h.judge(run, attempt, start)
			}
		}
		if task == p.check && p.id != h.pipelines[1].id {
			h.rules(tr, start)
		}
	}
	if h.rnd.IntN(5) == 0 {
		h.exec(`INSERT INTO AUD_GATE_WAITS (PIPELINE_RUN_ID, TASK_ID, FIRST_CHECK_AT, LOOKS, WAIT_UNTIL) VALUES ($1, $2, $3, 1, $3)`,
			run, p.check, h.at(start))
	}
}

// logFile writes an attempt's log, last written at end.
func (h *history) logFile(path string, end time.Time) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a log\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chtimes(path, end, end); err != nil {
		h.t.Fatal(err)
	}
}

// judge records the gate decisions of a P2 run's check attempt and, when
// satisfied, its consumption: P1's latest ended run and its load task run.
func (h *history) judge(run, attempt int64, at time.Time) {
	h.t.Helper()
	up := h.ids(`SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
		ORDER BY PIPELINE_RUN_ID DESC LIMIT 1`, h.pipelines[0].id)
	if len(up) == 0 {
		return
	}
	upTask := h.ids("SELECT TASK_RUN_ID FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND TASK_ID = $2", up[0], h.pipelines[0].load)
	var taskRun any
	if len(upTask) > 0 {
		taskRun = upTask[0]
	}
	h.exec(`INSERT INTO AUD_GATE_DECISIONS (PIPELINE_RUN_ID, ATTEMPT_ID, PIPELINE_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID, RESULT, REASON, DECIDED_AT)
		VALUES ($1, $2, $3, $4, 'SATISFIED', 'ok', $5)`, run, attempt, h.pipeDep, up[0], h.at(at))
	h.exec(`INSERT INTO AUD_GATE_DECISIONS (PIPELINE_RUN_ID, ATTEMPT_ID, TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID, SELECTED_TASK_RUN_ID, RESULT, REASON, DECIDED_AT)
		VALUES ($1, $2, $3, $4, $5, 'SATISFIED', 'ok', $6)`, run, attempt, h.taskDep, up[0], taskRun, h.at(at))
	if !h.hungry {
		return // nothing new consumed
	}
	h.exec(`INSERT INTO AUD_DEPENDENCY_CONSUMPTION (PIPELINE_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, DEPENDS_ON_PIPELINE_ID,
		CONSUMED_PIPELINE_RUN_ID, CONSUMED_AT) VALUES ($1, $2, $3, $4, $5, $6)`,
		h.pipeDep, h.pipelines[1].id, run, h.pipelines[0].id, up[0], h.at(at))
	if taskRun != nil {
		h.exec(`INSERT INTO AUD_DEPENDENCY_CONSUMPTION (TASK_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID,
			CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_AT) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			h.taskDep, h.pipelines[1].id, run, h.pipelines[1].check, h.pipelines[0].id, up[0], taskRun, h.at(at))
	}
}

// rules records a rules task run's rule run and a flag or two, clearing
// the flag of a key flagged before (ACTIVE_FLAG N) when it is flagged
// again, as the rules handler does.
func (h *history) rules(taskRun int64, at time.Time) {
	h.t.Helper()
	rr := h.insert(`INSERT INTO AUD_BUSINESS_RULES_RUN_LOG (BUSINESS_RULE_ID, TASK_RUN_ID, START_DATE, END_DATE, STATUS)
		VALUES ($1, $2, $3, $3, 'SUCCESS') RETURNING BUSINESS_RULE_RUN_ID`, h.rule, taskRun, h.at(at))
	for range h.rnd.IntN(3) {
		key := fmt.Sprint(h.rnd.IntN(40))
		h.exec("UPDATE AUD_BUSINESS_RULES_RESULTS SET ACTIVE_FLAG = 'N', END_DATE = $1 WHERE BUSINESS_RULE_KEY = $2 AND ACTIVE_FLAG = 'Y'", h.at(at), key)
		h.exec(`INSERT INTO AUD_BUSINESS_RULES_RESULTS (BUSINESS_RULE_RUN_ID, BUSINESS_RULE_ID, BUSINESS_RULE_KEY, TARGET_TABLE, STATUS, ACTIVE_FLAG, START_DATE)
			VALUES ($1, $2, $3, 'main.t', 'REPORT', 'Y', $4)`, rr, h.rule, key, h.at(at))
	}
}

// reopen sets a pipeline's latest ended run IN-PROGRESS, as a REOPEN
// does, or ends the reopened one again.
func (h *history) reopen(now time.Time) {
	h.t.Helper()
	p := h.pipelines[h.rnd.IntN(len(h.pipelines))]
	open := h.ids("SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS = 'IN-PROGRESS'", p.id)
	if len(open) > 0 {
		h.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $2 WHERE PIPELINE_RUN_ID = $1", open[0], h.at(now))
		return
	}
	latest := h.ids(`SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS IN ('SUCCESS', 'FAILED')
		ORDER BY PIPELINE_RUN_ID DESC LIMIT 1`, p.id)
	if len(latest) == 0 {
		return
	}
	h.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'IN-PROGRESS', END_DATE = NULL WHERE PIPELINE_RUN_ID = $1", latest[0])
	h.exec(`INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, ACTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY, REQUESTED_AT)
		VALUES ($1, $2, 'REOPEN', 'SUCCESS', 'IN-PROGRESS', 'again', 'tester', $3)`, p.id, latest[0], h.at(now))
}
