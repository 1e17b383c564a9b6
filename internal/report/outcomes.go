package report

// Operation is the outcome of a command that changed something (mark,
// cancel, pause, resume), apart from the stored states it changed. Status
// is the call's own outcome (SUCCESS when it did what was asked).
type Operation struct {
	Schema       string `json:"schema"`
	Status       string `json:"status"`
	Message      string `json:"message"`
	PipelineID   int64  `json:"pipeline_id"`
	PipelineCode string `json:"pipeline_code"`
	// Run and Task are the stored run and task the operation changed, as
	// they are afterwards; null for an operation on the pipeline itself,
	// such as a pause.
	Run  *Run        `json:"run"`
	Task *TaskStatus `json:"task"`
	// Pipeline is the pipeline's definition and pause state afterwards.
	Pipeline *PipelineView `json:"pipeline"`
	Waiting  bool          `json:"waiting"`
}

// Outcome is how a run command ended: SchemaRunOutcome for a run,
// SchemaTaskOutcome (with TaskCode) for one task. Its fields are in name
// order.
type Outcome struct {
	Detail       string `json:"detail"`
	ExitCode     int    `json:"exit_code"`
	PipelineCode string `json:"pipeline_code"`
	// PipelineRunID is null when no run was selected or started.
	PipelineRunID *int64 `json:"pipeline_run_id"`
	Schema        string `json:"schema"`
	// SLAStatus is the ended run's SLA status, MET or BREACHED; left out
	// for a task, a run not ended, or a pipeline without an SLA.
	SLAStatus string `json:"sla_status,omitempty"`
	Status    string `json:"status"`
	TaskCode  string `json:"task_code,omitempty"`
}

// Backfill is how a backfill ended, with the outcome of each run it made,
// oldest date first, and the one that stopped it (null when every date
// ran). Its fields are in name order.
type Backfill struct {
	ExitCode     int       `json:"exit_code"`
	From         string    `json:"from"`
	Message      string    `json:"message"`
	PipelineCode string    `json:"pipeline_code"`
	Runs         []Outcome `json:"runs"`
	Schema       string    `json:"schema"`
	Status       string    `json:"status"`
	Stopped      *Outcome  `json:"stopped"`
	To           string    `json:"to"`
}

// Reconciliation is what reconcile fenced and released. Its fields are in
// name order.
type Reconciliation struct {
	LostAttempts []LostAttempt `json:"lost_attempts"`
	// ReleasedRunIDs are the runs whose expired lease was taken away.
	ReleasedRunIDs []int64 `json:"released_run_ids"`
	Schema         string  `json:"schema"`
}

// LostAttempt is one attempt reconcile recorded LOST. Its fields are in
// name order.
type LostAttempt struct {
	AttemptID     int64  `json:"attempt_id"`
	AttemptNumber int    `json:"attempt_number"`
	OwnerID       string `json:"owner_id"`
	PipelineCode  string `json:"pipeline_code"`
	PipelineRunID int64  `json:"pipeline_run_id"`
	// ProcessStopped is set when the owner's process was alive on this
	// host and was stopped.
	ProcessStopped bool `json:"process_stopped"`
	// RetryAttemptID is the retry queued by policy, null when none.
	RetryAttemptID *int64 `json:"retry_attempt_id"`
	TaskCode       string `json:"task_code"`
	TaskRunID      int64  `json:"task_run_id"`
}

// Doctor is every check doctor ran and the counts of each result.
type Doctor struct {
	Schema   string        `json:"schema"`
	Checks   []DoctorCheck `json:"checks"`
	OK       int           `json:"ok"`
	Warnings int           `json:"warnings"`
	Failed   int           `json:"failed"`
}

// DoctorCheck is one check of doctor: its result (OK, WARN or FAIL), what
// it checked and what it found.
type DoctorCheck struct {
	Status string `json:"status"`
	Name   string `json:"name"`
	Detail string `json:"detail"`
}
