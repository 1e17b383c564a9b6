// Package pipelinetest gives tests an initialized Engine DB and a small
// builder that registers pipelines, tasks, parameters and dependencies the
// way a project migration does: through an engine transaction, by code.
package pipelinetest

import (
	"context"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// DB returns a fresh Engine DB of the dialect with the packaged schema.
func DB(t testing.TB, kind engine.Kind) *engine.DB {
	t.Helper()
	db := enginetest.Open(t, kind)
	Init(t, db)
	return db
}

// Init applies the packaged schema to an empty Engine DB.
func Init(t testing.TB, db *engine.DB) {
	t.Helper()
	if _, err := (&migrate.Runner{DB: db}).InitDB(context.Background(), false); err != nil {
		t.Fatalf("init-db: %v", err)
	}
}

// Each runs body on a fresh initialized Engine DB of each dialect.
func Each(t *testing.T, body func(t *testing.T, db *engine.DB)) {
	t.Helper()
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) { body(t, DB(t, k)) })
	}
}

// Builder registers metadata rows in an Engine DB.
type Builder struct {
	t  testing.TB
	db *engine.DB
}

// New returns a builder for the Engine DB.
func New(t testing.TB, db *engine.DB) *Builder { return &Builder{t: t, db: db} }

// Exec runs one statement in an engine transaction and fails the test on error.
func (b *Builder) Exec(query string, args ...any) {
	b.t.Helper()
	err := b.db.Tx(context.Background(), func(tx *engine.Tx) error {
		_, err := tx.ExecContext(context.Background(), query, args...)
		return err
	})
	if err != nil {
		b.t.Fatalf("%s: %v", query, err)
	}
}

// Pipeline registers an active pipeline with the refresh type (FULL or
// INCREMENTAL) and returns its id.
func (b *Builder) Pipeline(code, refresh string) int64 {
	b.t.Helper()
	b.Exec("INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ($1, $2, $3)",
		code, code+" pipeline", refresh)
	return b.PipelineID(code)
}

// PipelineID returns the id of the active pipeline with the code.
func (b *Builder) PipelineID(code string) int64 {
	b.t.Helper()
	var id int64
	err := b.db.QueryRowContext(context.Background(),
		"SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = $1 AND ACTIVE_FLAG = 'Y'", code).Scan(&id)
	if err != nil {
		b.t.Fatalf("pipeline %s: %v", code, err)
	}
	return id
}

// Task registers an active task of the pipeline with its parameters and
// returns its id. The handler is SQL, PYTHON, BUSINESS_RULES or EMAIL_ALERT.
func (b *Builder) Task(pipeline, code, handler string, params map[string]string) int64 {
	b.t.Helper()
	b.Exec(`INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ($1, 'ETL', $2, $3)`,
		code, b.PipelineID(pipeline), handler)
	id := b.TaskID(pipeline, code)
	for name, value := range params {
		b.Exec("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES ($1, $2, $3)", id, name, value)
	}
	return id
}

// Condition sets a task's run condition: ALL, ANY, or N with its count.
func (b *Builder) Condition(pipeline, task, condition string, count int) {
	b.t.Helper()
	var c any
	if condition == "N" {
		c = count
	}
	b.Exec("UPDATE CFG_TASKS SET RUN_CONDITION = $1, RUN_CONDITION_COUNT = $2 WHERE TASK_ID = $3",
		condition, c, b.TaskID(pipeline, task))
}

// TaskID returns the id of the active task.
func (b *Builder) TaskID(pipeline, code string) int64 {
	b.t.Helper()
	var id int64
	err := b.db.QueryRowContext(context.Background(), `SELECT t.TASK_ID FROM CFG_TASKS t
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
		WHERE p.PIPELINE_CODE = $1 AND t.TASK_CODE = $2 AND t.ACTIVE_FLAG = 'Y'`, pipeline, code).Scan(&id)
	if err != nil {
		b.t.Fatalf("task %s.%s: %v", pipeline, code, err)
	}
	return id
}

// Dep makes pipeline.task depend on upstreamPipeline.upstreamTask with the
// type (SUCCESS, FAILURE, ALWAYS, HAS_DATA) and returns the dependency id.
func (b *Builder) Dep(pipeline, task, upstreamPipeline, upstreamTask, typ string) int64 {
	b.t.Helper()
	b.Exec(`INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
		VALUES ($1, $2, $3, $4, $5)`, b.PipelineID(pipeline), b.TaskID(pipeline, task),
		b.PipelineID(upstreamPipeline), b.TaskID(upstreamPipeline, upstreamTask), typ)
	var id int64
	b.db.QueryRowContext(context.Background(), "SELECT max(TASK_DEPENDENCY_ID) FROM CFG_TASK_DEPENDENCY").Scan(&id)
	return id
}

// PipelineDep makes pipeline depend on upstream with the type and returns
// the dependency id.
func (b *Builder) PipelineDep(pipeline, upstream, typ string) int64 {
	b.t.Helper()
	b.Exec(`INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE) VALUES ($1, $2, $3)`,
		b.PipelineID(pipeline), b.PipelineID(upstream), typ)
	var id int64
	b.db.QueryRowContext(context.Background(), "SELECT max(PIPELINE_DEPENDENCY_ID) FROM CFG_PIPELINE_DEPENDENCY").Scan(&id)
	return id
}
