package report

// Run is one run of a pipeline (an AUD_PIPELINES_RUN_LOG row).
type Run struct {
	Schema        string   `json:"schema"`
	PipelineID    int64    `json:"pipeline_id"`
	PipelineCode  string   `json:"pipeline_code"`
	ID            int64    `json:"pipeline_run_id"`
	Key           string   `json:"run_key"`
	TriggerKind   string   `json:"trigger_kind"`
	RunDate       *string  `json:"run_date"`
	Status        string   `json:"status"`
	StartDate     *Instant `json:"start_date"`
	EndDate       *Instant `json:"end_date"`
	SLAStatus     *string  `json:"sla_status"`
	Backfill      bool     `json:"backfill"`
	StartedBy     *string  `json:"started_by"`
	StartedByKind *string  `json:"started_by_kind"`
	EndedBy       *string  `json:"ended_by"`
	EndedByKind   *string  `json:"ended_by_kind"`
}

// TaskRun is one task's summary under a run (an AUD_TASK_RUN_LOG row) and,
// where a document lists them, its attempts in order.
type TaskRun struct {
	Schema        string    `json:"schema"`
	PipelineID    int64     `json:"pipeline_id"`
	PipelineRunID int64     `json:"pipeline_run_id"`
	TaskID        int64     `json:"task_id"`
	TaskCode      string    `json:"task_code"`
	TaskRunID     int64     `json:"task_run_id"`
	Status        string    `json:"status"`
	StartDate     *Instant  `json:"start_date"`
	EndDate       *Instant  `json:"end_date"`
	AttemptCount  int       `json:"attempt_count"`
	SourceCount   *int64    `json:"source_count"`
	TargetCount   *int64    `json:"target_count"`
	InsertCount   *int64    `json:"insert_count"`
	UpdateCount   *int64    `json:"update_count"`
	DeleteCount   *int64    `json:"delete_count"`
	RowsWritten   *int64    `json:"rows_written"`
	ErrorMessage  *string   `json:"error_message"`
	Attempts      []Attempt `json:"attempts"`
}

// Attempt is one AUD_TASK_ATTEMPTS row.
type Attempt struct {
	Schema          string   `json:"schema"`
	AttemptID       int64    `json:"attempt_id"`
	TaskRunID       int64    `json:"task_run_id"`
	AttemptNumber   int      `json:"attempt_number"`
	Status          string   `json:"status"`
	OwnerID         *string  `json:"owner_id"`
	QueuedAt        *Instant `json:"queued_at"`
	StartedAt       *Instant `json:"started_at"`
	EndedAt         *Instant `json:"ended_at"`
	NotBefore       *Instant `json:"not_before"`
	Host            *string  `json:"host"`
	PID             *int64   `json:"pid"`
	RowsWritten     *int64   `json:"rows_written"`
	ErrorMessage    *string  `json:"error_message"`
	LogPath         *string  `json:"log_path"`
	RequestedBy     *string  `json:"requested_by"`
	RequestedByKind *string  `json:"requested_by_kind"`
}
