package metrics

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// readTimeout bounds the Engine DB reads of one scrape.
const readTimeout = 10 * time.Second

// unknown labels a run or attempt whose pipeline or task is not in CFG_.
const unknown = "unknown"

// history reads what the Engine DB records of runs and attempts into the
// registry's counters, histograms and gauges at each scrape, so that they
// agree with `etl-craft history` whichever process did the work: the
// server, a foreground run, an orchestrator's steps. The first read counts
// every run and attempt stored, in one statement (so one state of the
// Engine DB); each later one reads only what changed since: the rows added
// (tails of their ids), the rows still open, and the runs an operator
// reopened, in one statement whose text never changes (one round trip,
// prepared once). A scrape so costs the same whatever the length of the
// history.
//
// Counters count events: a run reopened and ended again counts as ended
// twice. The duration histograms hold the runs and attempts that ended
// since the server started.
type history struct {
	db  *engine.DB
	v   *vecs
	log *slog.Logger

	mu    sync.Mutex
	begun bool
	// labelsRead is set once the labels were read in this refresh: a new
	// pipeline or task reads them again, at most once per refresh.
	labelsRead bool
	// pipelines and tasks label rows by PIPELINE_ID and TASK_ID.
	pipelines map[int64]string
	tasks     map[int64]taskLabels
	runs      tail
	reopens   tail
	attempts  tail
	openRuns  map[int64]*openRun
	open      map[int64]taskLabels // the attempts not ended, by ATTEMPT_ID
	// gateWaits is how many gate waits of open runs wait, as last read.
	gateWaits float64
}

// taskLabels are the labels of a task's attempts.
type taskLabels struct{ pipeline, handler string }

// openRun is a run not ended when last read.
type openRun struct {
	pipeline, trigger string
	status            records.RunStatus
	// since is START_DATE: when it was queued, or admitted.
	since time.Time
	// breachCounted: its SLA breach was counted, or it is never measured
	// again (a reopened run).
	breachCounted bool
}

// runRow is a row of AUD_PIPELINES_RUN_LOG as history reads it.
type runRow struct {
	id, pipelineID int64
	trigger        string
	status         records.RunStatus
	sla            sql.NullString
	start, end     engine.Time
}

// runFields are the columns of a runRow, of the runs r.
const runFields = "r.PIPELINE_RUN_ID, r.PIPELINE_ID, r.TRIGGER_KIND, r.STATUS, r.SLA_STATUS, r.START_DATE, r.END_DATE"

// runColumns selects the runRows a condition appended selects.
const runColumns = "SELECT " + runFields + " FROM AUD_PIPELINES_RUN_LOG r WHERE "

// attemptRow is a row of AUD_TASK_ATTEMPTS as history reads it.
type attemptRow struct {
	id, taskID     int64
	status         records.AttemptStatus
	retry          bool // queued as a retry (NOT_BEFORE set)
	started, ended engine.Time
}

// openStatus selects the runs not ended.
var openStatus = "STATUS IN (" + records.SQL(records.RunQueued, records.RunInProgress) + ")"

// retried is 1 for an attempt a queued as a retry (NOT_BEFORE set), else 0.
const retried = "CASE WHEN a.NOT_BEFORE IS NULL THEN 0 ELSE 1 END"

// attempts joins the attempts a to their task runs t.
const attempts = "AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID"

// attemptChanges selects the attempts a condition appended selects, as
// partAttempt rows.
var attemptChanges = fmt.Sprintf("SELECT %d, a.ATTEMPT_ID, t.TASK_ID, NULL, a.STATUS, NULL, a.STARTED_AT, a.ENDED_AT, %s FROM %s WHERE ",
	partAttempt, retried, attempts)

// gateWaitChanges is the partGateWaits row: how many gate waits wait of
// the open runs of a table (or a query's).
func gateWaitChanges(runs string) string {
	return fmt.Sprintf(`SELECT %d, COUNT(*), 0, NULL, NULL, NULL, NULL, NULL, 0 FROM AUD_GATE_WAITS
		WHERE NEXT_CHECK_AT IS NOT NULL AND PIPELINE_RUN_ID IN (SELECT PIPELINE_RUN_ID FROM %s WHERE %s)`, partGateWaits, runs, openStatus)
}

// refresh reads what changed since the last read. Each step reads its
// rows whole before it counts any, so that a read that fails counts
// nothing, and the next refresh reads it again.
func (h *history) refresh(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	now := time.Now()
	h.labelsRead = false
	if !h.begun {
		if err := h.begin(ctx, now); err != nil {
			return err
		}
		h.begun = true
	} else if err := h.catchUp(ctx, now); err != nil {
		return err
	}
	h.gauges(now)
	return nil
}

// The parts of the rows a read returns: what the first column says a row is.
const (
	partRun          = 1 // a run: open, added, or reopened since the last read
	partIntervention = 2 // an intervention's id: added, or near the highest
	partAttempt      = 3 // an attempt: open, or added since the last read
	partGateWaits    = 4 // how many gate waits of open runs wait (id)
	partRunCount     = 5 // how many runs (id) have a pipeline (ref), trigger, status and SLA
	partAttemptCount = 6 // how many attempts (id) have a task (ref), status and retry flag
	partRunID        = 7 // a run's id near the highest
	partAttemptID    = 8 // an attempt's id near the highest
)

// change is a row a read returns: a run's columns as a runRow's, an
// attempt's as an attemptRow's (ref its task), a count or an id as id.
type change struct {
	part        int
	id, ref     int64
	trigger     sql.NullString
	status, sla sql.NullString
	start, end  engine.Time
	retry       bool
}

// run is the run a partRun row holds.
func (c change) run() runRow {
	return runRow{id: c.id, pipelineID: c.ref, trigger: c.trigger.String, status: records.RunStatus(c.status.String),
		sla: c.sla, start: c.start, end: c.end}
}

// attempt is the attempt a partAttempt row holds.
func (c change) attempt() attemptRow {
	return attemptRow{id: c.id, taskID: c.ref, status: records.AttemptStatus(c.status.String), retry: c.retry,
		started: c.start, ended: c.end}
}

// read runs a statement of change rows and returns them all.
func (h *history) read(ctx context.Context, query string, args []any) ([]change, error) {
	var rows []change
	err := scan(ctx, h.db, query, args, func(s scanner) error {
		var c change
		err := s.Scan(&c.part, &c.id, &c.ref, &c.trigger, &c.status, &c.sla, &c.start, &c.end, &c.retry)
		rows = append(rows, c)
		return err
	})
	return rows, err
}

// begins is the statement of the first read: the runs stored, counted by
// pipeline, trigger, status and SLA, and the open ones; the gate waits of
// these; the attempts stored, counted by task, status and retry flag, and
// the open ones; the ids near the highest of the runs, attempts and
// interventions. Being one statement, it reads one state of the Engine DB.
var begins = strings.Join([]string{
	fmt.Sprintf(`SELECT %d, COUNT(*), PIPELINE_ID, TRIGGER_KIND, STATUS, SLA_STATUS, NULL, NULL, 0 FROM AUD_PIPELINES_RUN_LOG
		GROUP BY PIPELINE_ID, TRIGGER_KIND, STATUS, SLA_STATUS`, partRunCount),
	fmt.Sprintf("SELECT %d, %s, 0 FROM AUD_PIPELINES_RUN_LOG r WHERE r.%s", partRun, runFields, openStatus),
	gateWaitChanges("AUD_PIPELINES_RUN_LOG"),
	fmt.Sprintf("SELECT %d, COUNT(*), t.TASK_ID, NULL, a.STATUS, NULL, NULL, NULL, %s FROM %s GROUP BY t.TASK_ID, a.STATUS, 9",
		partAttemptCount, retried, attempts),
	attemptChanges + "a.STATUS IN (" + records.SQLActiveAttempts + ")",
	near(partRunID, "AUD_PIPELINES_RUN_LOG", "PIPELINE_RUN_ID"),
	near(partAttemptID, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID"),
	near(partIntervention, "AUD_RUN_INTERVENTIONS", "INTERVENTION_ID"),
}, "\nUNION ALL ")

// near selects, as rows of the part, the ids of a table within maxGaps of
// its highest, which is among them.
func near(part int, table, id string) string {
	return fmt.Sprintf("SELECT %d, %s, 0, NULL, NULL, NULL, NULL, NULL, 0 FROM %s WHERE %s > (SELECT COALESCE(MAX(%s), 0) FROM %s) - %d",
		part, id, table, id, id, table, maxGaps)
}

// begin counts every run and attempt stored, read in one statement
// (begins), and notes the ones still open and where the tails start.
func (h *history) begin(ctx context.Context, now time.Time) error {
	if err := h.loadLabels(ctx); err != nil {
		return err
	}
	rows, err := h.read(ctx, begins, nil)
	if err != nil {
		return err
	}
	h.openRuns, h.open, h.gateWaits = map[int64]*openRun{}, map[int64]taskLabels{}, 0
	recent := map[int][]int64{}
	for _, c := range rows {
		switch c.part {
		case partRunCount:
			p, trigger, status, n := h.pipeline(c.ref), c.trigger.String, records.RunStatus(c.status.String), float64(c.id)
			h.v.runsStarted.WithLabelValues(p, trigger).Add(n)
			if status.Ended() {
				h.v.runsEnded.WithLabelValues(p, trigger, string(status)).Add(n)
			}
			if c.sla.String == string(records.SLABreached) {
				h.v.slaBreaches.WithLabelValues(p).Add(n)
			}
		case partRun:
			h.see(c.run(), &openRun{breachCounted: c.sla.String == string(records.SLABreached)})
		case partGateWaits:
			h.gateWaits = float64(c.id)
		case partAttemptCount:
			l, status, n := h.task(c.ref), records.AttemptStatus(c.status.String), float64(c.id)
			if c.retry {
				h.v.attemptsRetried.WithLabelValues(l.pipeline, l.handler).Add(n)
			}
			if status.Ended() {
				h.v.attemptsEnded.WithLabelValues(l.pipeline, l.handler, string(status)).Add(n)
			}
		case partAttempt:
			h.open[c.id] = h.task(c.ref)
		default:
			recent[c.part] = append(recent[c.part], c.id)
		}
	}
	for part, t := range map[int]*tail{partRunID: &h.runs, partAttemptID: &h.attempts, partIntervention: &h.reopens} {
		high := int64(0)
		if len(recent[part]) > 0 {
			high = slices.Max(recent[part])
		}
		t.begin(high, recent[part], now)
	}
	return nil
}

// changes returns the statement that reads what changed since the last
// read, with its arguments: the runs above the tail or in its gaps, the
// open runs, the runs reopened by an intervention added, the interventions
// added, the attempts added and the open ones, and the gate waits of the
// runs open now (every run open now is one of those read). A run may be
// read twice: open and reopened. The ids bind as one argument per set
// (engine.InIDs), so that its text never changes.
func (h *history) changes() (string, []any) {
	var args []any
	var newRuns, open, reopened, interventions, newAttempts, running string
	args, newRuns = h.runs.where(h.db, args, "r.PIPELINE_RUN_ID")
	args, open = h.db.InIDs(args, "r.PIPELINE_RUN_ID", slices.Collect(maps.Keys(h.openRuns)))
	args, reopened = h.reopens.where(h.db, args, "i.INTERVENTION_ID")
	args, interventions = h.reopens.where(h.db, args, "INTERVENTION_ID")
	args, newAttempts = h.attempts.where(h.db, args, "a.ATTEMPT_ID")
	args, running = h.db.InIDs(args, "a.ATTEMPT_ID", slices.Collect(maps.Keys(h.open)))
	return fmt.Sprintf(`WITH runs AS (
		%s%s OR %s
		UNION ALL SELECT %s FROM AUD_RUN_INTERVENTIONS i JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = i.PIPELINE_RUN_ID
		WHERE %s AND i.ACTION = '%s')
	SELECT %d, PIPELINE_RUN_ID, PIPELINE_ID, TRIGGER_KIND, STATUS, SLA_STATUS, START_DATE, END_DATE, 0 FROM runs
	UNION ALL SELECT %d, INTERVENTION_ID, 0, NULL, NULL, NULL, NULL, NULL, 0 FROM AUD_RUN_INTERVENTIONS WHERE %s
	UNION ALL %s%s OR %s
	UNION ALL %s`,
		runColumns, newRuns, open, runFields, reopened, records.ActionReopen,
		partRun, partIntervention, interventions, attemptChanges, newAttempts, running,
		gateWaitChanges("runs")), args
}

// catchUp reads, in one statement (changes), the runs and attempts added,
// reopened or still open since the last read, and counts them. It reads
// every row before it counts any.
func (h *history) catchUp(ctx context.Context, now time.Time) error {
	query, args := h.changes()
	rows, err := h.read(ctx, query, args)
	if err != nil {
		return err
	}
	var fresh, freshAttempts, interventions []int64
	goneRuns, goneAttempts := set(slices.Collect(maps.Keys(h.openRuns))), set(slices.Collect(maps.Keys(h.open)))
	seen := map[int64]bool{}
	for _, c := range rows {
		switch c.part {
		case partRun:
			if seen[c.id] {
				continue
			}
			seen[c.id] = true
			r := c.run()
			o, open := h.openRuns[r.id]
			switch {
			case h.runs.unread(r.id):
				o = &openRun{}
				h.see(r, o)
				h.v.runsStarted.WithLabelValues(o.pipeline, o.trigger).Inc()
				fresh = append(fresh, r.id)
			case open:
				delete(goneRuns, r.id)
				h.see(r, o)
			default:
				// Reopened: its next ending counts too; its SLA is never
				// measured again.
				h.see(r, &openRun{breachCounted: true})
			}
		case partIntervention:
			interventions = append(interventions, c.id)
		case partAttempt:
			a := c.attempt()
			l := h.open[a.id]
			if h.attempts.unread(a.id) {
				l = h.task(a.taskID)
				if a.retry {
					h.v.attemptsRetried.WithLabelValues(l.pipeline, l.handler).Inc()
				}
				freshAttempts = append(freshAttempts, a.id)
			} else {
				delete(goneAttempts, a.id)
			}
			h.seeAttempt(a, l)
		case partGateWaits:
			h.gateWaits = float64(c.id)
		}
	}
	for id := range goneRuns {
		delete(h.openRuns, id)
	}
	for id := range goneAttempts {
		delete(h.open, id)
	}
	h.runs.read(fresh, now)
	h.reopens.read(interventions, now)
	h.attempts.read(freshAttempts, now)
	return nil
}

// see applies a run as read to its entry o: its labels and status, its SLA
// breach, and its ending, after which it is no longer open.
func (h *history) see(r runRow, o *openRun) {
	o.pipeline, o.trigger, o.status = h.pipeline(r.pipelineID), r.trigger, r.status
	if r.start.Valid {
		o.since = r.start.Time
	}
	if r.sla.String == string(records.SLABreached) && !o.breachCounted {
		h.v.slaBreaches.WithLabelValues(o.pipeline).Inc()
		o.breachCounted = true
	}
	if !r.status.Ended() {
		h.openRuns[r.id] = o
		return
	}
	delete(h.openRuns, r.id)
	h.v.runsEnded.WithLabelValues(o.pipeline, o.trigger, string(r.status)).Inc()
	if r.start.Valid && r.end.Valid {
		h.v.runDuration.WithLabelValues(string(r.status)).Observe(r.end.Time.Sub(r.start.Time).Seconds())
	}
}

// seeAttempt applies an attempt as read: once ended it is counted and no
// longer open.
func (h *history) seeAttempt(a attemptRow, l taskLabels) {
	if !a.status.Ended() {
		h.open[a.id] = l
		return
	}
	delete(h.open, a.id)
	h.v.attemptsEnded.WithLabelValues(l.pipeline, l.handler, string(a.status)).Inc()
	if a.started.Valid && a.ended.Valid {
		h.v.attemptDuration.WithLabelValues(l.handler, string(a.status)).Observe(a.ended.Time.Sub(a.started.Time).Seconds())
	}
}

// gauges sets the queue's and the gates' gauges from the open runs.
func (h *history) gauges(now time.Time) {
	var queued, running float64
	var oldest time.Time
	for _, o := range h.openRuns {
		switch o.status {
		case records.RunQueued:
			queued++
			if oldest.IsZero() || o.since.Before(oldest) {
				oldest = o.since
			}
		case records.RunInProgress:
			running++
		}
	}
	h.v.runsQueued.Set(queued)
	h.v.runsInProgress.Set(running)
	age := 0.0
	if !oldest.IsZero() {
		age = max(now.Sub(oldest).Seconds(), 0)
	}
	h.v.oldestQueued.Set(age)
	h.v.gateWaits.Set(h.gateWaits)
}

// loadLabels reads the labels of every pipeline and task.
func (h *history) loadLabels(ctx context.Context) error {
	h.labelsRead = true
	h.pipelines, h.tasks = map[int64]string{}, map[int64]taskLabels{}
	err := scan(ctx, h.db, "SELECT PIPELINE_ID, PIPELINE_CODE FROM CFG_PIPELINES", nil, func(s scanner) error {
		var id int64
		var code string
		err := s.Scan(&id, &code)
		h.pipelines[id] = code
		return err
	})
	if err != nil {
		return err
	}
	return scan(ctx, h.db, "SELECT TASK_ID, PIPELINE_ID, HANDLER FROM CFG_TASKS", nil, func(s scanner) error {
		var id, pipeline int64
		var handler string
		err := s.Scan(&id, &pipeline, &handler)
		h.tasks[id] = taskLabels{pipeline: h.pipelines[pipeline], handler: handler}
		return err
	})
}

// pipeline is the code of a pipeline, read again when it is new.
func (h *history) pipeline(id int64) string {
	code, ok := h.pipelines[id]
	if !ok && !h.labelsRead && h.loadLabels(context.Background()) == nil {
		code, ok = h.pipelines[id]
	}
	if !ok || code == "" {
		return unknown
	}
	return code
}

// task is the labels of a task's attempts, read again when it is new.
func (h *history) task(id int64) taskLabels {
	l, ok := h.tasks[id]
	if !ok && !h.labelsRead && h.loadLabels(context.Background()) == nil {
		l, ok = h.tasks[id]
	}
	if !ok || l.pipeline == "" {
		l.pipeline = unknown
	}
	if l.handler == "" {
		l.handler = unknown
	}
	return l
}

// scanner is what a row gives to scan.
type scanner interface{ Scan(dest ...any) error }

// scan runs a query and calls each for each row.
func scan(ctx context.Context, q engine.Querier, query string, args []any, each func(s scanner) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// set is a set of ids.
func set(ids []int64) map[int64]bool {
	s := make(map[int64]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}

// historyCollector refreshes the history before it collects the metrics
// history keeps, so that each scrape reads the Engine DB as it is.
type historyCollector struct {
	h *history
	// failed counts the scrapes whose read failed (their values are those
	// of the last read).
	failed     prometheus.Counter
	collectors []prometheus.Collector
}

func (c *historyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range c.collectors {
		v.Describe(ch)
	}
}

func (c *historyCollector) Collect(ch chan<- prometheus.Metric) {
	if err := c.h.refresh(context.Background()); err != nil {
		c.failed.Inc()
		c.h.log.Warn("metrics: could not read the runs and attempts from the Engine DB; this scrape shows the last values read",
			"error", err)
	}
	for _, v := range c.collectors {
		v.Collect(ch)
	}
}
