// Package docversion keeps the versions of each task's DOCUMENTATION
// parameter in AUD_TASK_DOCUMENTATION: a new row, with the next version
// number, only when the text's hash differs from the latest version's.
package docversion

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
)

// Request says which tasks to look at and whether to record.
type Request struct {
	// PipelineCode limits the look to one active pipeline; "" is all.
	PipelineCode string
	// TaskCode limits it to one task of PipelineCode.
	TaskCode string
	// Check reports what would change and records nothing.
	Check bool
}

// Refresh compares each active task's DOCUMENTATION with its latest
// recorded version and, unless req.Check, records a new version of every
// text that changed, in one transaction. Tasks are listed by pipeline and
// task code; an unknown pipeline or task is a metadata error (exit 4).
func Refresh(ctx context.Context, db *engine.DB, req Request) (report.DocsVersions, error) {
	doc := report.DocsVersions{Schema: report.SchemaDocsVersions, Recorded: !req.Check, Tasks: []report.DocsVersion{}}
	var taskID int64
	if req.PipelineCode != "" {
		g, err := pipeline.Load(ctx, db, req.PipelineCode)
		if err != nil {
			return doc, err
		}
		if req.TaskCode != "" {
			t, err := g.FindTask(req.TaskCode)
			if err != nil {
				return doc, err
			}
			taskID = t.ID
		}
	}
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		texts, err := documented(ctx, tx, req.PipelineCode, taskID)
		if err != nil {
			return err
		}
		for _, d := range texts {
			v := report.DocsVersion{PipelineCode: d.pipeline, TaskCode: d.task, Version: d.latest}
			if d.hash != d.latestHash {
				v.Version, v.Changed = d.latest+1, true
				if !req.Check {
					if _, err := tx.ExecContext(ctx, `INSERT INTO AUD_TASK_DOCUMENTATION
						(TASK_ID, VERSION, DOCUMENTATION_HASH, DOCUMENTATION) VALUES ($1, $2, $3, $4)`,
						d.id, v.Version, d.hash, d.text); err != nil {
						return exit.Wrap(exit.EngineDB, err, "cannot record version %d of %s.%s's DOCUMENTATION in AUD_TASK_DOCUMENTATION",
							v.Version, d.pipeline, d.task)
					}
				}
			}
			doc.Tasks = append(doc.Tasks, v)
		}
		return nil
	})
	return doc, err
}

// text is a task's DOCUMENTATION and its latest recorded version (0 and ""
// when none).
type text struct {
	id             int64
	pipeline, task string
	text, hash     string
	latest         int
	latestHash     string
}

// documented reads the DOCUMENTATION of the active tasks of active
// pipelines (of one pipeline, of one task), with their latest versions.
func documented(ctx context.Context, q engine.Querier, pipelineCode string, taskID int64) ([]text, error) {
	rows, err := q.QueryContext(ctx, `SELECT t.TASK_ID, p.PIPELINE_CODE, t.TASK_CODE, tp.PARAMETER_VALUE,
			d.VERSION, d.DOCUMENTATION_HASH
		FROM CFG_TASK_PARAMETERS tp
		JOIN CFG_TASKS t ON t.TASK_ID = tp.TASK_ID AND t.ACTIVE_FLAG = 'Y'
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
		LEFT JOIN AUD_TASK_DOCUMENTATION d ON d.TASK_ID = t.TASK_ID
			AND d.VERSION = (SELECT MAX(VERSION) FROM AUD_TASK_DOCUMENTATION m WHERE m.TASK_ID = t.TASK_ID)
		WHERE tp.PARAMETER_NAME = 'DOCUMENTATION' AND tp.ACTIVE_FLAG = 'Y'
			AND ($1 = '' OR p.PIPELINE_CODE = $1) AND ($2 = 0 OR t.TASK_ID = $2)
		ORDER BY p.PIPELINE_CODE, t.TASK_CODE`, pipelineCode, taskID)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "cannot read the tasks' DOCUMENTATION")
	}
	defer rows.Close()
	var out []text
	for rows.Next() {
		var t text
		var value, hash sql.NullString
		var version sql.NullInt64
		if err := rows.Scan(&t.id, &t.pipeline, &t.task, &value, &version, &hash); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "cannot read the tasks' DOCUMENTATION")
		}
		t.text, t.latest, t.latestHash = value.String, int(version.Int64), hash.String
		sum := sha256.Sum256([]byte(t.text))
		t.hash = hex.EncodeToString(sum[:])
		out = append(out, t)
	}
	return out, rows.Err()
}
