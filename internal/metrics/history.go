package metrics

import (
	"context"
	"database/sql"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// readTimeout bounds the Engine DB reads of one scrape.
const readTimeout = 10 * time.Second

// inChunk is how many ids one IN (…) list holds.
const inChunk = 500

// unknown labels a run or attempt whose pipeline or task is not in CFG_.
const unknown = "unknown"

// history reads what the Engine DB records of runs and attempts into the
// registry's counters, histograms and gauges at each scrape, so that they
// agree with `etl-craft history` whichever process did the work: the
// server, a foreground run, an orchestrator's steps. The first read counts
// every run and attempt stored, in one snapshot; each later one reads only
// what changed since: the rows added (tails of their ids), the rows still
// open, and the runs an operator reopened. A scrape so costs the same
// whatever the length of the history.
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

// runColumns are the columns of a runRow.
const runColumns = `SELECT PIPELINE_RUN_ID, PIPELINE_ID, TRIGGER_KIND, STATUS, SLA_STATUS, START_DATE, END_DATE
	FROM AUD_PIPELINES_RUN_LOG WHERE `

// attemptRow is a row of AUD_TASK_ATTEMPTS as history reads it.
type attemptRow struct {
	id, taskID     int64
	status         records.AttemptStatus
	retry          bool // queued as a retry (NOT_BEFORE set)
	started, ended engine.Time
}

// attemptColumns are the columns of an attemptRow.
const attemptColumns = `SELECT a.ATTEMPT_ID, t.TASK_ID, a.STATUS, CASE WHEN a.NOT_BEFORE IS NULL THEN 0 ELSE 1 END, a.STARTED_AT, a.ENDED_AT
	FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID WHERE `

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
	return h.gauges(ctx, now)
}

// totals are what begin read: the runs and attempts stored, counted by
// their labels, and the ones still open.
type totals struct {
	runs     []runCount
	open     []runRow
	attempts []attemptCount
	running  []attemptRow
}

// runCount is how many runs have a pipeline, trigger, status and SLA.
type runCount struct {
	r runRow
	n float64
}

// attemptCount is how many attempts have a task, status and retry flag.
type attemptCount struct {
	a attemptRow
	n float64
}

// begin counts every run and attempt stored, read in one snapshot, and
// notes the ones still open and where the tails start.
func (h *history) begin(ctx context.Context, now time.Time) error {
	if err := h.loadLabels(ctx); err != nil {
		return err
	}
	var t totals
	tails := []struct {
		tail      *tail
		table, id string
		high      int64
		recent    []int64
	}{{tail: &h.runs, table: "AUD_PIPELINES_RUN_LOG", id: "PIPELINE_RUN_ID"},
		{tail: &h.attempts, table: "AUD_TASK_ATTEMPTS", id: "ATTEMPT_ID"},
		{tail: &h.reopens, table: "AUD_RUN_INTERVENTIONS", id: "INTERVENTION_ID"}}
	err := h.db.Snapshot(ctx, func(q engine.Querier) error {
		err := scan(ctx, q, `SELECT PIPELINE_ID, TRIGGER_KIND, STATUS, SLA_STATUS, COUNT(*) FROM AUD_PIPELINES_RUN_LOG
			GROUP BY PIPELINE_ID, TRIGGER_KIND, STATUS, SLA_STATUS`, nil, func(s scanner) error {
			var c runCount
			err := s.Scan(&c.r.pipelineID, &c.r.trigger, &c.r.status, &c.r.sla, &c.n)
			t.runs = append(t.runs, c)
			return err
		})
		if err != nil {
			return err
		}
		if t.open, err = readRuns(ctx, q, "STATUS IN ("+records.SQL(records.RunQueued, records.RunInProgress)+")", nil); err != nil {
			return err
		}
		err = scan(ctx, q, `SELECT t.TASK_ID, a.STATUS, CASE WHEN a.NOT_BEFORE IS NULL THEN 0 ELSE 1 END, COUNT(*)
			FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID GROUP BY t.TASK_ID, a.STATUS, 3`, nil,
			func(s scanner) error {
				var c attemptCount
				err := s.Scan(&c.a.taskID, &c.a.status, &c.a.retry, &c.n)
				t.attempts = append(t.attempts, c)
				return err
			})
		if err != nil {
			return err
		}
		if t.running, err = readAttempts(ctx, q, "a.STATUS IN ("+records.SQLActiveAttempts+")", nil); err != nil {
			return err
		}
		for i := range tails {
			x := &tails[i]
			if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX("+x.id+"), 0) FROM "+x.table).Scan(&x.high); err != nil {
				return err
			}
			if x.recent, err = ids(ctx, q, "SELECT "+x.id+" FROM "+x.table+" WHERE "+x.id+" > $1", x.high-maxGaps); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range t.runs {
		p := h.pipeline(c.r.pipelineID)
		h.v.runsStarted.WithLabelValues(p, c.r.trigger).Add(c.n)
		if c.r.status.Ended() {
			h.v.runsEnded.WithLabelValues(p, c.r.trigger, string(c.r.status)).Add(c.n)
		}
		if c.r.sla.String == string(records.SLABreached) {
			h.v.slaBreaches.WithLabelValues(p).Add(c.n)
		}
	}
	h.openRuns = map[int64]*openRun{}
	for _, r := range t.open {
		h.see(r, &openRun{breachCounted: r.sla.String == string(records.SLABreached)})
	}
	for _, c := range t.attempts {
		l := h.task(c.a.taskID)
		if c.a.retry {
			h.v.attemptsRetried.WithLabelValues(l.pipeline, l.handler).Add(c.n)
		}
		if c.a.status.Ended() {
			h.v.attemptsEnded.WithLabelValues(l.pipeline, l.handler, string(c.a.status)).Add(c.n)
		}
	}
	h.open = map[int64]taskLabels{}
	for _, a := range t.running {
		h.open[a.id] = h.task(a.taskID)
	}
	for _, x := range tails {
		x.tail.begin(x.high, x.recent, now)
	}
	return nil
}

// catchUp reads the runs and attempts added, reopened or still open since
// the last read.
func (h *history) catchUp(ctx context.Context, now time.Time) error {
	// New runs.
	cond, args := h.runs.where("PIPELINE_RUN_ID")
	added, err := readRuns(ctx, h.db, cond, args)
	if err != nil {
		return err
	}
	fresh := make([]int64, len(added))
	for i, r := range added {
		o := &openRun{}
		h.see(r, o)
		h.v.runsStarted.WithLabelValues(o.pipeline, o.trigger).Inc()
		fresh[i] = r.id
	}
	h.runs.read(fresh, now)
	// Runs reopened: their next ending counts too; their SLA is never
	// measured again.
	cond, args = h.reopens.where("INTERVENTION_ID")
	type intervention struct {
		id, run int64
		action  string
	}
	var ivs []intervention
	err = scan(ctx, h.db, "SELECT INTERVENTION_ID, PIPELINE_RUN_ID, ACTION FROM AUD_RUN_INTERVENTIONS WHERE "+cond, args,
		func(s scanner) error {
			var iv intervention
			err := s.Scan(&iv.id, &iv.run, &iv.action)
			ivs = append(ivs, iv)
			return err
		})
	if err != nil {
		return err
	}
	seen := make([]int64, len(ivs))
	for i, iv := range ivs {
		seen[i] = iv.id
		if _, open := h.openRuns[iv.run]; iv.action == records.ActionReopen && !open && !slices.Contains(fresh, iv.run) {
			h.openRuns[iv.run] = &openRun{breachCounted: true}
		}
	}
	h.reopens.read(seen, now)
	// Runs still open.
	asked := slices.Collect(maps.Keys(h.openRuns))
	var still []runRow
	for chunk := range slices.Chunk(asked, inChunk) {
		cond, args := in("PIPELINE_RUN_ID", chunk)
		rows, err := readRuns(ctx, h.db, cond, args)
		if err != nil {
			return err
		}
		still = append(still, rows...)
	}
	gone := set(asked)
	for _, r := range still {
		delete(gone, r.id)
		h.see(r, h.openRuns[r.id])
	}
	for id := range gone {
		delete(h.openRuns, id)
	}
	// New attempts.
	cond, args = h.attempts.where("a.ATTEMPT_ID")
	started, err := readAttempts(ctx, h.db, cond, args)
	if err != nil {
		return err
	}
	fresh = make([]int64, len(started))
	for i, a := range started {
		l := h.task(a.taskID)
		if a.retry {
			h.v.attemptsRetried.WithLabelValues(l.pipeline, l.handler).Inc()
		}
		h.seeAttempt(a, l)
		fresh[i] = a.id
	}
	h.attempts.read(fresh, now)
	// Attempts still open.
	asked = slices.Collect(maps.Keys(h.open))
	var running []attemptRow
	for chunk := range slices.Chunk(asked, inChunk) {
		cond, args := in("a.ATTEMPT_ID", chunk)
		rows, err := readAttempts(ctx, h.db, cond, args)
		if err != nil {
			return err
		}
		running = append(running, rows...)
	}
	gone = set(asked)
	for _, a := range running {
		delete(gone, a.id)
		h.seeAttempt(a, h.open[a.id])
	}
	for id := range gone {
		delete(h.open, id)
	}
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
func (h *history) gauges(ctx context.Context, now time.Time) error {
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
	var waits float64
	for chunk := range slices.Chunk(slices.Collect(maps.Keys(h.openRuns)), inChunk) {
		cond, args := in("PIPELINE_RUN_ID", chunk)
		var n float64
		if err := h.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM AUD_GATE_WAITS WHERE NEXT_CHECK_AT IS NOT NULL AND "+cond,
			args...).Scan(&n); err != nil {
			return err
		}
		waits += n
	}
	h.v.gateWaits.Set(waits)
	return nil
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

// ids reads a query's one column of ids.
func ids(ctx context.Context, q engine.Querier, query string, args ...any) ([]int64, error) {
	var out []int64
	err := scan(ctx, q, query, args, func(s scanner) error {
		var id int64
		err := s.Scan(&id)
		out = append(out, id)
		return err
	})
	return out, err
}

// in is the condition that col is one of the ids, numbered from $1.
func in(col string, ids []int64) (string, []any) {
	marks := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		marks[i], args[i] = "$"+strconv.Itoa(i+1), id
	}
	return col + " IN (" + strings.Join(marks, ", ") + ")", args
}

// set is a set of ids.
func set(ids []int64) map[int64]bool {
	s := make(map[int64]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}

// readRuns reads the runs a condition selects.
func readRuns(ctx context.Context, q engine.Querier, cond string, args []any) ([]runRow, error) {
	var out []runRow
	err := scan(ctx, q, runColumns+cond, args, func(s scanner) error {
		var r runRow
		err := s.Scan(&r.id, &r.pipelineID, &r.trigger, &r.status, &r.sla, &r.start, &r.end)
		out = append(out, r)
		return err
	})
	return out, err
}

// readAttempts reads the attempts a condition selects.
func readAttempts(ctx context.Context, q engine.Querier, cond string, args []any) ([]attemptRow, error) {
	var out []attemptRow
	err := scan(ctx, q, attemptColumns+cond, args, func(s scanner) error {
		var a attemptRow
		err := s.Scan(&a.id, &a.taskID, &a.status, &a.retry, &a.started, &a.ended)
		out = append(out, a)
		return err
	})
	return out, err
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
