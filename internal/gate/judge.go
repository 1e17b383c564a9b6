package gate

import (
	"fmt"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Output is the upstream output a dependency is judged by: the upstream
// pipeline's latest finished run that is not a backfill or, for a task
// dependency, the upstream task's latest finished row under such a run.
type Output struct {
	PipelineRunID int64
	// TaskRunID is the upstream task's row; 0 for a pipeline dependency.
	TaskRunID int64
	// Status is the run's (or the task row's) status.
	Status string
	// Revision is the pipeline run's published OUTPUT_REVISION.
	Revision int
	// HasData reports whether rows were written: by the task, or by any task
	// of the pipeline run (ROWS_WRITTEN, else TARGET_COUNT for older rows).
	HasData bool
}

// name says which run the output is, as reasons write it: "run 7", or "run 7
// (task_run_id=41)" for a task's row.
func (o Output) name() string {
	if o.TaskRunID != 0 {
		return fmt.Sprintf("run %d (task_run_id=%d)", o.PipelineRunID, o.TaskRunID)
	}
	return fmt.Sprintf("run %d", o.PipelineRunID)
}

// Consumed is what a dependency consumed last: its latest
// AUD_DEPENDENCY_CONSUMPTION row.
type Consumed struct {
	PipelineRunID int64
	// TaskRunID is the consumed upstream task row; 0 for a pipeline
	// dependency, and for task rows kept from the trackers before migration
	// 0003, which named only the run.
	TaskRunID int64
	Revision  int
}

// name says which run was consumed, as reasons write it.
func (c Consumed) name() string {
	return Output{PipelineRunID: c.PipelineRunID, TaskRunID: c.TaskRunID}.name()
}

// Verdict is the judgement of one dependency and why, without its label.
type Verdict struct {
	Satisfied bool
	Why       string
}

// Judge decides one dependency from the upstream's latest finished output
// (nil when it has none) and what the dependency last consumed (nil when
// nothing). Only the latest output counts, and it must be new: a run after
// the consumed one, or the consumed run itself with a higher published
// revision when the dependency consumes repairs. A new output must then
// satisfy the dependency's type.
func Judge(d Dependency, out *Output, last *Consumed) (Verdict, error) {
	if out == nil {
		if _, err := readiness.Satisfies(d.Type, "", false); err != nil {
			return Verdict{}, err
		}
		return Verdict{Why: "has no finished run"}, nil
	}
	ok, err := readiness.Satisfies(d.Type, out.Status, out.HasData)
	if err != nil {
		return Verdict{}, err
	}
	if last != nil {
		order := compareRuns(*out, *last)
		if order == 0 && out.Revision > last.Revision && !d.ConsumeRepairs {
			return Verdict{Why: fmt.Sprintf(
				"has no run since %s, which was already consumed: its revision %d is newer than the consumed revision %d, "+
					"but CONSUME_REPAIRS='N' accepts only a newer run; set CONSUME_REPAIRS to 'Y' to accept repairs",
				last.name(), out.Revision, last.Revision)}, nil
		}
		if order < 0 || (order == 0 && out.Revision <= last.Revision) {
			return Verdict{Why: fmt.Sprintf("has no run since %s, which was already consumed", last.name())}, nil
		}
	}
	if !ok {
		detail := ""
		if d.Type == pipeline.HasData && out.Status == string(records.RunSuccess) {
			detail = " with no rows written"
		}
		return Verdict{Why: fmt.Sprintf("last finished %s ended %s%s, which does not satisfy a %s dependency",
			out.name(), out.Status, detail, d.Type)}, nil
	}
	why := fmt.Sprintf("last finished %s ended %s", out.name(), out.Status)
	if out.Revision > 1 {
		why += fmt.Sprintf(" (revision %d)", out.Revision)
	}
	return Verdict{Satisfied: true, Why: why}, nil
}

// compareRuns orders an output against a consumed run: by the task row when
// both name one, else by the pipeline run.
func compareRuns(out Output, last Consumed) int {
	a, b := out.PipelineRunID, last.PipelineRunID
	if out.TaskRunID != 0 && last.TaskRunID != 0 {
		a, b = out.TaskRunID, last.TaskRunID
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
