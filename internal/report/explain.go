package report

import "github.com/etl-craft/etl-craft/internal/records"

// Explain says why a task is in its state under a run and what happens next
// (etl-craft explain). Its text output writes one line per part, in field
// order.
type Explain struct {
	Schema       string `json:"schema"`
	PipelineID   int64  `json:"pipeline_id"`
	PipelineCode string `json:"pipeline_code"`
	TaskID       int64  `json:"task_id"`
	TaskCode     string `json:"task_code"`
	// State is the task's status under the run or, while it has none, what
	// the readiness rule says of it: READY, WAITING, BLOCKED (it can never
	// run under the run) or GATED (its dependencies on other pipelines
	// decide); NOT RUN once the run has ended without it.
	State string `json:"state"`
	Run   Run    `json:"run"`
	// TaskRunID is null while the task has no row under the run; Attempt
	// is its latest attempt, null when it has none.
	TaskRunID *int64   `json:"task_run_id"`
	Attempt   *Attempt `json:"attempt"`
	Paused    *Pause   `json:"paused"`
	// RunCondition is ALL, ANY or N; RequiredCount how many dependencies
	// must be met.
	RunCondition  string              `json:"run_condition"`
	RequiredCount int                 `json:"required_count"`
	Dependencies  []ExplainDependency `json:"dependencies"`
	GateWaits     []ExplainGateWait   `json:"gate_waits"`
	RetryAt       *Instant            `json:"retry_at"`
	Next          string              `json:"next"`
	// Chosen says how the run was chosen (see inspect.ViewRun).
	Chosen records.Choice `json:"-"`
}

// ExplainDependency is one dependency of an explained task and how it
// stands.
type ExplainDependency struct {
	// Upstream is the upstream task's code, or PIPELINE.task for a task of
	// another pipeline.
	Upstream string `json:"upstream"`
	Type     string `json:"type"`
	// CrossPipeline is set for a task of another pipeline, which the task's
	// gate judges by that pipeline's latest finished run.
	CrossPipeline bool `json:"cross_pipeline"`
	// Status is the upstream's status (under the run, or in its judged
	// run); null while it has none.
	Status *string `json:"status"`
	// Met is yes, no (for good, under the run), or open (not yet).
	Met    string `json:"met"`
	Reason string `json:"reason"`
}

// ExplainGateWait is a gate of the run that waited for upstreams still
// running (an AUD_GATE_WAITS row): the pipeline's admission gate, or the
// explained task's own.
type ExplainGateWait struct {
	// Gate is "pipeline" or "task".
	Gate         string   `json:"gate"`
	FirstCheckAt Instant  `json:"first_check_at"`
	NextCheckAt  *Instant `json:"next_check_at"`
	Looks        int      `json:"looks"`
	WaitUntil    Instant  `json:"wait_until"`
}
