// Package pipelinetest gives tests an initialized Engine DB and a small
// builder that registers pipelines, tasks, parameters and dependencies the
// way a project migration does: through an engine transaction, by code.
package pipelinetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// DB returns a fresh Engine DB of the dialect with the packaged schema. On
// PostgreSQL it is a copy of a template database that init-db initialized
// once per test binary, which is faster than initializing each test's own.
func DB(t testing.TB, kind engine.Kind) *engine.DB {
	t.Helper()
	if kind == engine.Postgres {
		u := enginetest.NewPGDatabaseFrom(t, pgTemplate(t))
		return enginetest.OpenWith(t, engine.Options{Kind: engine.Postgres, DSN: u, Schema: "public"})
	}
	db := enginetest.Open(t, kind)
	Init(t, db)
	return db
}

// template is the name of the initialized PostgreSQL template database, made
// by the first pgTemplate call of the test binary.
var template struct {
	sync.Mutex
	name string
}

// pgTemplate returns the name of a PostgreSQL database holding exactly what
// init-db writes into an empty one. It is named by a digest of the test
// binary, so it is the same code's template: a rerun of an unchanged test
// binary against the same server reuses it, and nothing else does. It is
// built under another name and renamed when complete, so a copy never sees
// it half made.
func pgTemplate(t testing.TB) string {
	t.Helper()
	template.Lock()
	defer template.Unlock()
	if template.name != "" {
		return template.name
	}
	name, err := binaryDigest()
	if err != nil {
		t.Fatalf("naming the Engine DB template: %v", err)
	}
	name = "etl_craft_template_" + name
	admin, err := sql.Open("pgx", enginetest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if !databaseExists(t, admin, name) {
		buildTemplate(t, admin, name)
	}
	template.name = name
	return name
}

// buildTemplate initializes a new database and renames it to name; when
// another process got there first, its own copy is dropped.
func buildTemplate(t testing.TB, admin *sql.DB, name string) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	building := "etl_craft_template_build_" + hex.EncodeToString(b)
	if _, err := admin.Exec("CREATE DATABASE " + building); err != nil {
		t.Fatalf("creating the Engine DB template: %v", err)
	}
	db, err := engine.Open(context.Background(), engine.Options{Kind: engine.Postgres,
		DSN: enginetest.DatabaseURL(t, enginetest.AdminURL(t), building), Schema: "public"})
	if err == nil {
		_, err = (&migrate.Runner{DB: db}).InitDB(context.Background(), false)
		db.Close()
	}
	if err == nil {
		_, err = admin.Exec("ALTER DATABASE " + building + " RENAME TO " + name)
		if err != nil && databaseExists(t, admin, name) {
			err = nil
		}
	}
	if err != nil || databaseExists(t, admin, building) {
		admin.Exec("DROP DATABASE IF EXISTS " + building + " WITH (FORCE)")
	}
	if err != nil {
		t.Fatalf("building the Engine DB template: %v", err)
	}
}

func databaseExists(t testing.TB, admin *sql.DB, name string) bool {
	t.Helper()
	var exists bool
	if err := admin.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatalf("looking up database %s: %v", name, err)
	}
	return exists
}

// binaryDigest returns the first 16 hex digits of the SHA-256 of the
// running test binary.
func binaryDigest() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
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
