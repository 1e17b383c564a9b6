package pipeline

// Loading a pipeline's definition from the CFG_ tables.

import (
	"context"
	"database/sql"
	"slices"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/suggest"
)

const pipelineColumns = `PIPELINE_ID, PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, RUN_SCHEDULE, SLA_IN_HOURS,
	REFRESH_TYPE, CAST(PIPELINE_PARAMETERS AS VARCHAR), SCHEDULE_TIMEZONE, CATCHUP, MAX_CATCHUP_RUNS,
	OVERLAP_POLICY, CAST(SCHEDULE_START_DATE AS VARCHAR), CREATED_BY`

func scanPipeline(s interface{ Scan(...any) error }) (Pipeline, error) {
	var p Pipeline
	var desc, sched, params, tz, catchup, overlap, start, by sql.NullString
	var maxRuns sql.NullInt64
	err := s.Scan(&p.ID, &p.Code, &p.Name, &desc, &sched, &p.SLAHours, &p.RefreshType, &params, &tz,
		&catchup, &maxRuns, &overlap, &start, &by)
	p.Description, p.RunSchedule, p.Parameters = desc.String, sched.String, params.String
	p.ScheduleTimezone, p.Catchup, p.OverlapPolicy = tz.String, catchup.String == "Y", overlap.String
	p.MaxCatchupRuns, p.ScheduleStartDate, p.CreatedBy = int(maxRuns.Int64), start.String, by.String
	return p, err
}

// List returns every active pipeline, ordered by code.
func List(ctx context.Context, q engine.Querier) ([]Pipeline, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+pipelineColumns+" FROM CFG_PIPELINES WHERE ACTIVE_FLAG = 'Y' ORDER BY PIPELINE_CODE")
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
	}
	defer rows.Close()
	var out []Pipeline
	for rows.Next() {
		p, err := scanPipeline(rows)
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Find returns the active pipeline with the code. An unknown code is a
// metadata error (exit 4) that suggests close matches.
func Find(ctx context.Context, q engine.Querier, code string) (Pipeline, error) {
	p, err := scanPipeline(q.QueryRowContext(ctx,
		"SELECT "+pipelineColumns+" FROM CFG_PIPELINES WHERE PIPELINE_CODE = $1 AND ACTIVE_FLAG = 'Y'", code))
	if engine.IsNoRows(err) {
		all, _ := List(ctx, q)
		codes := make([]string, len(all))
		for i, x := range all {
			codes[i] = x.Code
		}
		return Pipeline{}, exit.Errorf(exit.Metadata, "no active pipeline has the code %q in CFG_PIPELINES%s",
			code, suggest.DidYouMean(code, codes))
	}
	if err != nil {
		return Pipeline{}, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
	}
	return p, nil
}

// Load reads the pipeline with the code and its active tasks, parameters and
// dependencies. It does not validate the graph; call Validate.
func Load(ctx context.Context, q engine.Querier, code string) (*Graph, error) {
	p, err := Find(ctx, q, code)
	if err != nil {
		return nil, err
	}
	g := &Graph{Pipeline: p, byID: map[int64]*Task{}, byCode: map[string]*Task{}}
	if err := g.loadTasks(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the tasks of %s", code)
	}
	if err := g.loadParams(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the task parameters of %s", code)
	}
	if err := g.loadDeps(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the task dependencies of %s", code)
	}
	if err := g.loadPipelineDeps(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the pipeline dependencies of %s", code)
	}
	return g, nil
}

func (g *Graph) loadTasks(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT TASK_ID, TASK_CODE, TASK_TYPE, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT
		FROM CFG_TASKS WHERE PIPELINE_ID = $1 AND ACTIVE_FLAG = 'Y' ORDER BY TASK_CODE`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		t := &Task{Params: map[string]string{}}
		var cond sql.NullString
		var count sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Code, &t.Type, &t.Handler, &cond, &count); err != nil {
			return err
		}
		t.RunCondition, t.RunConditionCount = All, int(count.Int64)
		if cond.Valid && cond.String != "" {
			t.RunCondition = cond.String
		}
		g.Tasks = append(g.Tasks, t)
		g.byID[t.ID] = t
		g.byCode[t.Code] = t
	}
	return rows.Err()
}

func (g *Graph) loadParams(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT tp.TASK_ID, tp.PARAMETER_NAME, tp.PARAMETER_VALUE
		FROM CFG_TASK_PARAMETERS tp JOIN CFG_TASKS t ON t.TASK_ID = tp.TASK_ID
		WHERE t.PIPELINE_ID = $1 AND t.ACTIVE_FLAG = 'Y' AND tp.ACTIVE_FLAG = 'Y'`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		var value sql.NullString
		if err := rows.Scan(&id, &name, &value); err != nil {
			return err
		}
		if t := g.byID[id]; t != nil {
			t.Params[name] = value.String
		}
	}
	return rows.Err()
}

func (g *Graph) loadDeps(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT d.TASK_DEPENDENCY_ID, d.TASK_ID, d.DEPENDS_ON_PIPELINE_ID, up.PIPELINE_CODE,
			d.DEPENDS_ON_TASK_ID, ut.TASK_CODE, d.DEPENDENCY_TYPE, d.CONSUME_REPAIRS,
			nt.TASK_CODE, nt.ACTIVE_FLAG, np.PIPELINE_ID, np.PIPELINE_CODE, np.ACTIVE_FLAG
		FROM CFG_TASK_DEPENDENCY d
		JOIN CFG_TASKS t ON t.TASK_ID = d.TASK_ID AND t.ACTIVE_FLAG = 'Y'
		LEFT JOIN CFG_PIPELINES up ON up.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID AND up.ACTIVE_FLAG = 'Y'
		LEFT JOIN CFG_TASKS ut ON ut.TASK_ID = d.DEPENDS_ON_TASK_ID AND ut.ACTIVE_FLAG = 'Y'
			AND ut.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID
		LEFT JOIN CFG_TASKS nt ON nt.TASK_ID = d.DEPENDS_ON_TASK_ID
		LEFT JOIN CFG_PIPELINES np ON np.PIPELINE_ID = nt.PIPELINE_ID
		WHERE d.PIPELINE_ID = $1 AND d.ACTIVE_FLAG = 'Y'
		ORDER BY d.TASK_DEPENDENCY_ID`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d := &Dependency{}
		var upPipe, upTask, consume, namedTask, namedTaskActive, namedPipe, namedPipeActive sql.NullString
		var upPipeID, namedPipeID sql.NullInt64
		if err := rows.Scan(&d.ID, &d.TaskID, &upPipeID, &upPipe, &d.UpstreamTaskID, &upTask, &d.Type, &consume,
			&namedTask, &namedTaskActive, &namedPipeID, &namedPipe, &namedPipeActive); err != nil {
			return err
		}
		d.Named = NamedTask{Task: namedTask.String, TaskActive: namedTaskActive.String == "Y",
			PipelineID: namedPipeID.Int64, Pipeline: namedPipe.String, PipelineActive: namedPipeActive.String == "Y"}
		d.UpstreamPipelineID = upPipeID.Int64
		if !upPipeID.Valid {
			d.UpstreamPipelineID = g.Pipeline.ID
		}
		d.UpstreamPipeline, d.UpstreamTask = upPipe.String, upTask.String
		d.ConsumeRepairs = consume.String != "N"
		d.CrossPipeline = d.UpstreamPipelineID != g.Pipeline.ID
		if t := g.byID[d.TaskID]; t != nil {
			t.Deps = append(t.Deps, d)
		}
	}
	return rows.Err()
}

// Gated returns which of the pipelines have an active dependency on another
// pipeline (Graph.PipelineDeps): a run of one is admitted through its
// pipeline gate, which a run of any other passes without a look.
func Gated(ctx context.Context, q engine.Querier, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	for chunk := range slices.Chunk(ids, engine.InListMax) {
		args, in := engine.InList(nil, chunk)
		rows, err := q.QueryContext(ctx, `SELECT DISTINCT PIPELINE_ID FROM CFG_PIPELINE_DEPENDENCY
			WHERE ACTIVE_FLAG = 'Y' AND PIPELINE_ID IN (`+in+`)`, args...)
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINE_DEPENDENCY")
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINE_DEPENDENCY")
			}
			out[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINE_DEPENDENCY")
		}
	}
	return out, nil
}

func (g *Graph) loadPipelineDeps(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT d.PIPELINE_DEPENDENCY_ID, d.DEPENDS_ON_PIPELINE_ID, up.PIPELINE_CODE,
			d.DEPENDENCY_TYPE, d.CONSUME_REPAIRS
		FROM CFG_PIPELINE_DEPENDENCY d
		LEFT JOIN CFG_PIPELINES up ON up.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID AND up.ACTIVE_FLAG = 'Y'
		WHERE d.PIPELINE_ID = $1 AND d.ACTIVE_FLAG = 'Y'
		ORDER BY d.PIPELINE_DEPENDENCY_ID`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d := &PipelineDependency{}
		var up, consume sql.NullString
		if err := rows.Scan(&d.ID, &d.UpstreamID, &up, &d.Type, &consume); err != nil {
			return err
		}
		d.Upstream, d.ConsumeRepairs = up.String, consume.String != "N"
		g.PipelineDeps = append(g.PipelineDeps, d)
	}
	return rows.Err()
}
