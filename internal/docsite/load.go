package docsite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Recent is how many runs, task runs, interventions and consumptions a page
// lists; the statistics cover every run.
const Recent = 50

// Load reads the catalog from the Engine DB: every active pipeline with its
// tasks, rules, runs, interventions, consumption and pauses. projectDir is
// where SOURCE_SQL_FILE paths are read from.
func Load(ctx context.Context, q engine.Querier, projectDir string, now time.Time) (*Catalog, error) {
	c := &Catalog{GeneratedAt: now.UTC()}
	pipes, err := pipeline.List(ctx, q)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*Pipeline{}
	tasks := map[int64]*Task{}
	for _, x := range pipes {
		g, err := pipeline.Load(ctx, q, x.Code)
		if err != nil {
			return nil, err
		}
		p := &Pipeline{ID: x.ID, Code: x.Code, Name: x.Name, Description: x.Description,
			Schedule: x.RunSchedule, RefreshType: x.RefreshType}
		if x.SLAHours.Valid {
			p.SLAHours = fmt.Sprint(x.SLAHours.Float64)
		}
		for _, d := range g.PipelineDeps {
			p.DependsOn = append(p.DependsOn, d.Upstream)
		}
		for _, gt := range g.Tasks {
			t := &Task{ID: gt.ID, Pipeline: x.Code, Code: gt.Code, Type: gt.Type, Handler: gt.Handler,
				Condition: gt.ConditionLabel(), Params: gt.Params}
			for _, d := range gt.Deps {
				t.Upstreams = append(t.Upstreams, d.Label())
			}
			if t.Handler == pipeline.HandlerSQL {
				if _, text, err := sqltask.ReadSource(projectDir, t.Params); err != nil {
					t.SQLError = err.Error()
				} else {
					t.SQL = text
				}
			}
			p.Tasks = append(p.Tasks, t)
			tasks[t.ID] = t
		}
		c.Pipelines = append(c.Pipelines, p)
		byID[p.ID] = p
	}
	steps := []func(context.Context, engine.Querier, *Catalog, map[int64]*Pipeline, map[int64]*Task) error{
		loadRules, loadRuns, loadTaskRuns, loadInterventions, loadConsumption, loadPauses,
	}
	for _, step := range steps {
		if err := step(ctx, q, c, byID, tasks); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// each runs query and calls scan for every row.
func each(ctx context.Context, q engine.Querier, what, query string, scan func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

func loadRules(ctx context.Context, q engine.Querier, _ *Catalog, _ map[int64]*Pipeline, tasks map[int64]*Task) error {
	return each(ctx, q, "CFG_BUSINESS_RULES", `SELECT BUSINESS_RULE_ID, TASK_ID, BUSINESS_RULE_NAME, BUSINESS_RULE_TYPE,
	BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER, BUSINESS_RULE_SQL
FROM CFG_BUSINESS_RULES WHERE ACTIVE_FLAG = 'Y' ORDER BY TASK_ID, SEQUENCE_NUMBER, BUSINESS_RULE_ID`,
		func(rows *sql.Rows) error {
			var r Rule
			var taskID int64
			if err := rows.Scan(&r.ID, &taskID, &r.Name, &r.Type, &r.KeyColumn, &r.TargetTable, &r.Sequence, &r.SQL); err != nil {
				return err
			}
			if t := tasks[taskID]; t != nil {
				t.Rules = append(t.Rules, &r)
			}
			return nil
		})
}

func loadRuns(ctx context.Context, q engine.Querier, c *Catalog, byID map[int64]*Pipeline, _ map[int64]*Task) error {
	runs, err := records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+"ORDER BY r.PIPELINE_RUN_ID DESC")
	if err != nil {
		return fmt.Errorf("read AUD_PIPELINES_RUN_LOG: %w", err)
	}
	for _, x := range runs {
		p := byID[x.PipelineID]
		if p == nil {
			continue
		}
		r := &Run{ID: x.ID, Pipeline: x.PipelineCode, Key: x.Key, Trigger: string(x.TriggerKind), RunDate: x.RunDate,
			Status: string(x.Status), Start: x.Start.Time, SLAStatus: x.SLAStatus.String}
		if x.End.Valid {
			r.End = x.End.Time
		}
		if x.Status.Ended() {
			p.Stats.add(x.Status == records.RunSuccess, x.Status == records.RunFailed, r.Duration())
		}
		p.Runs, c.Runs = recent(p.Runs, r), recent(c.Runs, r)
	}
	return nil
}

// recent appends x to a list read newest first, up to Recent items.
func recent[T any](list []*T, x *T) []*T {
	if len(list) < Recent {
		return append(list, x)
	}
	return list
}

// add counts one ended run.
func (s *RunStats) add(succeeded, failed bool, d time.Duration) {
	s.Average = (s.Average*time.Duration(s.Runs) + d) / time.Duration(s.Runs+1)
	s.Runs++
	if succeeded {
		s.Succeeded++
	}
	if failed {
		s.Failed++
	}
	s.Longest = max(s.Longest, d)
}

func loadTaskRuns(ctx context.Context, q engine.Querier, _ *Catalog, _ map[int64]*Pipeline, tasks map[int64]*Task) error {
	return each(ctx, q, "AUD_TASK_RUN_LOG", `SELECT TASK_RUN_ID, TASK_ID, PIPELINE_RUN_ID, STATUS, START_DATE, END_DATE,
	ROWS_WRITTEN, ATTEMPT_COUNT, ERROR_MESSAGE
FROM AUD_TASK_RUN_LOG ORDER BY TASK_RUN_ID DESC`,
		func(rows *sql.Rows) error {
			var r TaskRun
			var taskID int64
			var start, end records.Time
			var written sql.NullInt64
			var msg sql.NullString
			if err := rows.Scan(&r.ID, &taskID, &r.PipelineRunID, &r.Status, &start, &end, &written, &r.Attempts, &msg); err != nil {
				return err
			}
			t := tasks[taskID]
			if t == nil {
				return nil
			}
			r.Start, r.End, r.RowsWritten, r.Error = start.Time, end.Time, written.Int64, msg.String
			if st := records.TaskRunStatus(r.Status); st != records.TaskInProgress {
				t.Stats.add(st == records.TaskSuccess, st == records.TaskFailed, r.Duration())
			}
			t.Runs = recent(t.Runs, &r)
			return nil
		})
}

func loadInterventions(ctx context.Context, q engine.Querier, _ *Catalog, byID map[int64]*Pipeline, _ map[int64]*Task) error {
	return each(ctx, q, "AUD_RUN_INTERVENTIONS", `SELECT i.PIPELINE_ID, i.PIPELINE_RUN_ID, COALESCE(t.TASK_CODE, ''), i.ACTION,
	COALESCE(i.FROM_STATUS, ''), COALESCE(i.TO_STATUS, ''), i.REASON, i.REQUESTED_BY, i.REQUESTED_AT
FROM AUD_RUN_INTERVENTIONS i LEFT JOIN CFG_TASKS t ON t.TASK_ID = i.TASK_ID
ORDER BY i.INTERVENTION_ID DESC`,
		func(rows *sql.Rows) error {
			var x Intervention
			var pipeID int64
			var at records.Time
			if err := rows.Scan(&pipeID, &x.RunID, &x.Task, &x.Action, &x.From, &x.To, &x.Reason, &x.By, &at); err != nil {
				return err
			}
			if p := byID[pipeID]; p != nil {
				x.At = at.Time
				p.Interventions = recent(p.Interventions, &x)
			}
			return nil
		})
}

func loadConsumption(ctx context.Context, q engine.Querier, _ *Catalog, byID map[int64]*Pipeline, _ map[int64]*Task) error {
	return each(ctx, q, "AUD_DEPENDENCY_CONSUMPTION", `SELECT c.PIPELINE_ID, COALESCE(c.PIPELINE_RUN_ID, 0), COALESCE(t.TASK_CODE, ''),
	up.PIPELINE_CODE, c.CONSUMED_PIPELINE_RUN_ID, c.CONSUMED_REVISION, c.CONSUMED_AT
FROM AUD_DEPENDENCY_CONSUMPTION c
JOIN CFG_PIPELINES up ON up.PIPELINE_ID = c.DEPENDS_ON_PIPELINE_ID
LEFT JOIN CFG_TASKS t ON t.TASK_ID = c.TASK_ID
ORDER BY c.CONSUMPTION_ID DESC`,
		func(rows *sql.Rows) error {
			var x Consumption
			var pipeID int64
			var at records.Time
			if err := rows.Scan(&pipeID, &x.RunID, &x.Task, &x.Upstream, &x.ConsumedRunID, &x.Revision, &at); err != nil {
				return err
			}
			if p := byID[pipeID]; p != nil {
				x.At = at.Time
				p.Consumption = recent(p.Consumption, &x)
			}
			return nil
		})
}

func loadPauses(ctx context.Context, q engine.Querier, _ *Catalog, byID map[int64]*Pipeline, _ map[int64]*Task) error {
	return each(ctx, q, "AUD_PIPELINE_PAUSES", `SELECT PIPELINE_ID, PAUSED_BY, REASON, PAUSED_AT, RESUMED_AT,
	COALESCE(RESUMED_BY, ''), COALESCE(RESUME_REASON, '')
FROM AUD_PIPELINE_PAUSES ORDER BY PIPELINE_PAUSE_ID DESC`,
		func(rows *sql.Rows) error {
			var x Pause
			var pipeID int64
			var at, resumed records.Time
			if err := rows.Scan(&pipeID, &x.By, &x.Reason, &at, &resumed, &x.ResumedBy, &x.ResumeWhy); err != nil {
				return err
			}
			x.At, x.ResumedAt = at.Time, resumed.Time
			p := byID[pipeID]
			if p == nil {
				return nil
			}
			if !resumed.Valid && p.Paused == nil {
				p.Paused = &x
			}
			p.Pauses = recent(p.Pauses, &x)
			return nil
		})
}
