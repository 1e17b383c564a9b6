package report

import "github.com/etl-craft/etl-craft/internal/records"

// Step is an active task and its state under the selected run.
type Step struct {
	Schema        string `json:"schema"`
	PipelineID    int64  `json:"pipeline_id"`
	PipelineRunID int64  `json:"pipeline_run_id"`
	TaskID        int64  `json:"task_id"`
	TaskCode      string `json:"task_code"`
	// TaskRunID is nil while the task has no row under the run.
	TaskRunID *int64 `json:"task_run_id"`
	TaskType  string `json:"task_type"`
	Handler   string `json:"handler"`
	// RunCondition is ALL, ANY or N; RunConditionCount is N's count.
	RunCondition      string            `json:"run_condition"`
	RunConditionCount *int              `json:"run_condition_count"`
	Parameters        map[string]string `json:"parameters"`
	// Status is nil while the task has no row under the run.
	Status *string `json:"status"`
	// Condition is the run condition as text shows it: ALL, ANY or N=<count>.
	Condition string `json:"-"`
}

// Steps are a pipeline's active tasks, in code order, under one run.
type Steps struct {
	Schema        string `json:"schema"`
	PipelineID    int64  `json:"pipeline_id"`
	PipelineCode  string `json:"pipeline_code"`
	PipelineRunID int64  `json:"pipeline_run_id"`
	Steps         []Step `json:"steps"`
	// Chosen says how the run was chosen (see inspect.ViewRun).
	Chosen records.Choice `json:"-"`
}

// TaskStatus is one active task's state under the selected run.
type TaskStatus struct {
	TaskID   int64  `json:"task_id"`
	TaskCode string `json:"task_code"`
	// Status is nil while the task has no row under the run.
	Status          *string  `json:"status"`
	Attempts        int      `json:"attempts"`
	RowsWritten     *int64   `json:"rows_written"`
	DurationSeconds *float64 `json:"duration_seconds"`
	// Error is the first line of the task's error message.
	Error *string `json:"error"`
}

// Status is a run's header and every active task of its pipeline.
type Status struct {
	Schema          string       `json:"schema"`
	Pipeline        PipelineView `json:"pipeline"`
	Run             Run          `json:"run"`
	DurationSeconds *float64     `json:"duration_seconds"`
	Tasks           []TaskStatus `json:"tasks"`
	// BlockedByFailures are the tasks not yet run that can no longer run
	// because of failed upstreams, directly or through other blocked tasks.
	BlockedByFailures []string `json:"blocked_by_failures"`
	// Chosen says how the run was chosen (see inspect.ViewRun).
	Chosen records.Choice `json:"-"`
}
