// Package rules is the handler of BUSINESS_RULES tasks: the data-quality
// checks of CFG_BUSINESS_RULES, run against the warehouse, whose findings
// are kept in the Engine DB.
//
// Each active rule of the task names a TARGET_TABLE, its single key column
// and a correlated SELECT (BUSINESS_RULE_SQL) that returns a row when the
// target row t breaks the rule. The bind parameters :pipeline_id,
// :pipeline_run_id, :task_run_id and :run_date may appear in it; they are
// bound, never written into the text.
//
// A rule checks the rows of this run (t.PIPELINE_RUN_ID), or every row when
// the task is forced, and only the ACTIVE_FLAG = 'Y' versions when the target
// has that column. It also checks again every key it still flags, whatever
// run wrote it, so that a key fixed later or by hand is cleared. Newly
// breaking keys get an active AUD_BUSINESS_RULES_RESULTS row whose STATUS is
// the rule's type; flags of keys that now pass or have no row left are
// cleared (ACTIVE_FLAG N, END_DATE). Flags are information: a rule that
// flags keys succeeds.
//
// Rules run in waves of equal SEQUENCE_NUMBER, in ascending order; the rules
// of a wave run in parallel, at most the handler's limit at once. Each rule
// has its own AUD_BUSINESS_RULES_RUN_LOG row and commits on its own. A
// failed rule fails the task once its wave has finished, and the later
// waves' rules are recorded SKIPPED. Another attempt of the same task run
// skips the rules that succeeded; a rerun (--rerun) checks every rule again
// on the run's rows, a forced one (--force) on the whole table.
package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// New returns the handler of BUSINESS_RULES tasks, reading the rules from
// and recording their findings in the Engine DB db, running at most
// maxParallel rules of a wave at once (1 when it is below 1).
func New(db *engine.DB, maxParallel int) handler.Handler {
	return rulesHandler{db: db, maxParallel: max(maxParallel, 1)}
}

type rulesHandler struct {
	db          *engine.DB
	maxParallel int
}

// Check reviews a rules task for validate: its parameters (it reads none
// besides those every task may set) and, when the handler has an Engine DB,
// its active rules' SQL and key column, without connecting to the
// warehouse (CheckWarehouse goes on with it).
func (h rulesHandler) Check(t *handler.Task) (failures, warnings []string) {
	names := make([]string, 0, len(t.Params))
	for name := range t.Params {
		if !slices.Contains(taskParameters, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		warnings = append(warnings, fmt.Sprintf("%s is not a parameter BUSINESS_RULES tasks read: their rules are the CFG_BUSINESS_RULES rows of the task", name))
	}
	if h.db == nil {
		return nil, warnings
	}
	all, err := taskRules(context.Background(), h.db, t.PipelineID, t.TaskCode)
	if err != nil {
		return []string{err.Error()}, warnings
	}
	if len(all) == 0 {
		warnings = append(warnings, noRules)
	}
	for _, wave := range wavesOf(all) {
		for _, r := range wave {
			_, problems := readSQL(r)
			failures = append(failures, problems...)
			if strings.TrimSpace(r.key) == "" {
				failures = append(failures, "business rule "+r.name+": BUSINESS_RULE_KEY_COLUMN is empty: name the target's key column")
			}
		}
	}
	return failures, warnings
}

// noRules is the warning about a rules task without active rules.
const noRules = "the task has no active business rules: add CFG_BUSINESS_RULES rows for it"

// taskParameters are read for every task by the run engine and the catalog.
var taskParameters = []string{"TASK_TIMEOUT_SECONDS", "RETRIES", "RETRY_DELAY_SECONDS", "RETRY_BACKOFF", "DOCUMENTATION", "SOURCE_OBJECT", "TARGET_OBJECT"}

// Run performs one attempt of a rules task.
func (h rulesHandler) Run(ctx context.Context, t *handler.Task) (handler.Result, error) {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if t.Warehouse == nil || h.db == nil {
		return handler.Result{}, exit.Errorf(exit.Handler, "the BUSINESS_RULES task %s has no warehouse or Engine DB to work with", t.TaskCode)
	}
	st := store{db: h.db, taskRunID: t.TaskRunID}
	all, err := st.rules(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	if len(all) == 0 {
		log.Warn(noRules)
	}
	w, release, err := t.Warehouse(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	defer release()

	var tally tally
	waves := wavesOf(all)
	var failed error
	for i, wave := range waves {
		if failed != nil {
			for _, r := range wave {
				if err := st.skip(context.WithoutCancel(ctx), r); err != nil {
					return tally.result(), err
				}
			}
			continue
		}
		log.Info("checking a wave of business rules", "sequence_number", wave[0].seq, "rules", len(wave))
		failed = h.runWave(ctx, t, log, st, w, wave, &tally)
		if failed != nil && i+1 < len(waves) {
			log.Warn("a business rule failed: the later waves are skipped", "sequence_number", wave[0].seq)
		}
	}
	return tally.result(), failed
}

// runWave checks the rules of one wave in parallel and returns their
// failures, once every rule of the wave has ended.
func (h rulesHandler) runWave(ctx context.Context, t *handler.Task, log *slog.Logger, st store, w warehouse.Warehouse, wave []rule, tally *tally) error {
	sem := make(chan struct{}, h.maxParallel)
	errs := make([]error, len(wave))
	var wg sync.WaitGroup
	for i, r := range wave {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = fmt.Errorf("business rule %s was not started: %w", r.name, context.Cause(ctx))
				return
			}
			defer func() { <-sem }()
			errs[i] = h.runRule(ctx, t, log.With("rule", r.name), st, w, r, tally)
		}()
	}
	wg.Wait()
	// The first failure gives the task's exit code.
	var failures []error
	for _, err := range errs {
		if err != nil {
			failures = append(failures, err)
		}
	}
	switch len(failures) {
	case 0:
		return nil
	case 1:
		return failures[0]
	}
	return exit.Wrap(exit.CodeOf(failures[0]), errors.Join(failures...), "%d business rules failed", len(failures))
}

// runRule checks one rule, unless an earlier attempt of this task run did,
// and records its findings and its outcome.
func (h rulesHandler) runRule(ctx context.Context, t *handler.Task, log *slog.Logger, st store, w warehouse.Warehouse, r rule, tally *tally) error {
	prev, err := st.previous(ctx, r)
	if err != nil {
		return err
	}
	if prev.status == statusSuccess && !t.Force && !t.Rerun {
		log.Info("the business rule already succeeded in this task run: not checked again")
		tally.add(0, 0, true)
		return nil
	}
	runID, err := st.start(ctx, r, prev)
	if err != nil {
		return err
	}
	flagged, cleared, err := h.check(ctx, t, log, st, w, r, runID)
	if err != nil {
		log.Error("the business rule failed", "error", err)
		if ferr := st.fail(context.WithoutCancel(ctx), runID); ferr != nil {
			return errors.Join(err, ferr)
		}
		return err
	}
	log.Info("the business rule was checked", "flagged", flagged, "cleared", cleared)
	tally.add(flagged, cleared, false)
	return nil
}

// check finds the rule's breaking keys, and records the new flags and the
// cleared ones with the rule's success in one Engine DB transaction.
func (h rulesHandler) check(ctx context.Context, t *handler.Task, log *slog.Logger, st store, w warehouse.Warehouse, r rule, runID int64) (flagged, cleared int64, err error) {
	standing, err := st.standing(ctx, r)
	if err != nil {
		return 0, 0, err
	}
	c, err := newChecker(ctx, w, t, log, r)
	if err != nil {
		return 0, 0, err
	}
	breaking, err := c.breaking(ctx, standing)
	if err != nil {
		return 0, 0, err
	}
	var flag, clear []string
	for k := range breaking {
		if _, ok := standing[k]; !ok {
			flag = append(flag, k)
		}
	}
	for k := range standing {
		if !breaking[k] {
			clear = append(clear, k)
		}
	}
	slices.Sort(flag)
	slices.Sort(clear)
	if err := st.succeed(context.WithoutCancel(ctx), r, runID, flag, clear); err != nil {
		return 0, 0, err
	}
	return int64(len(flag)), int64(len(clear)), nil
}

// wavesOf groups rules by SEQUENCE_NUMBER, in ascending order, each wave in
// the order of the rules' names.
func wavesOf(rules []rule) [][]rule {
	sorted := slices.Clone(rules)
	slices.SortFunc(sorted, func(a, b rule) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), strings.Compare(a.name, b.name))
	})
	var waves [][]rule
	for _, r := range sorted {
		if n := len(waves); n > 0 && waves[n-1][0].seq == r.seq {
			waves[n-1] = append(waves[n-1], r)
			continue
		}
		waves = append(waves, []rule{r})
	}
	return waves
}

// tally adds up the counts of the rules of an attempt.
type tally struct {
	mu                        sync.Mutex
	flagged, cleared, checked int64
	skipped                   int64
}

func (t *tally) add(flagged, cleared int64, skipped bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flagged += flagged
	t.cleared += cleared
	if skipped {
		t.skipped++
	} else {
		t.checked++
	}
}

// result reports the counts: flagged keys as inserts, cleared ones as
// updates. A rules task writes no warehouse rows: its ROWS_WRITTEN is 0, so
// validate refuses HAS_DATA dependencies on it.
func (t *tally) result() handler.Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	return handler.Result{
		InsertCount: handler.Int(t.flagged), UpdateCount: handler.Int(t.cleared), RowsWritten: handler.Int(0),
		Reported: []handler.Reported{
			{Name: "RULES_CHECKED", Value: strconv.FormatInt(t.checked, 10)},
			{Name: "RULES_ALREADY_SUCCEEDED", Value: strconv.FormatInt(t.skipped, 10)},
		},
	}
}
