package report

import (
	"encoding/json"
)

// Intervention is one operator change to a run (an AUD_RUN_INTERVENTIONS row).
type Intervention struct {
	InterventionID int64 `json:"intervention_id"`
	PipelineRunID  int64 `json:"pipeline_run_id"`
	// TaskID and TaskCode are nil for a change to the run itself.
	TaskID          *int64  `json:"task_id"`
	TaskCode        *string `json:"task_code"`
	Action          string  `json:"action"`
	FromStatus      *string `json:"from_status"`
	ToStatus        *string `json:"to_status"`
	TargetCount     *int64  `json:"target_count"`
	Reason          string  `json:"reason"`
	RequestedBy     string  `json:"requested_by"`
	RequestedByKind *string `json:"requested_by_kind"`
	RequestedAt     Instant `json:"requested_at"`
}

// History is a pipeline's runs, or one task's runs, newest first, and the
// interventions made on the runs shown. JSON lists either kind as
// "entries".
type History struct {
	Schema       string  `json:"schema"`
	PipelineID   int64   `json:"pipeline_id"`
	PipelineCode string  `json:"pipeline_code"`
	TaskCode     *string `json:"task_code"`
	// Runs is the pipeline view; TaskRuns (with their attempts) the task view.
	Runs     []Run          `json:"-"`
	TaskRuns []TaskRun      `json:"-"`
	Changes  []Intervention `json:"changes"`
}

// MarshalJSON writes the history with its runs or task runs as "entries".
func (h History) MarshalJSON() ([]byte, error) {
	type plain History
	var entries any = h.Runs
	if h.TaskCode != nil {
		entries = h.TaskRuns
	}
	return json.Marshal(struct {
		plain
		Entries any `json:"entries"`
	}{plain(h), entries})
}

// Empty reports whether the history lists no run.
func (h History) Empty() bool { return len(h.Runs) == 0 && len(h.TaskRuns) == 0 }
