package run

// Run statuses (AUD_PIPELINES_RUN_LOG.STATUS).
const (
	RunQueued     = "QUEUED"
	RunInProgress = "IN-PROGRESS"
	RunSuccess    = "SUCCESS"
	RunFailed     = "FAILED"
	RunSkipped    = "SKIPPED"
	RunCancelled  = "CANCELLED"
)

// Task-run statuses (AUD_TASK_RUN_LOG.STATUS): the summary of a task's
// latest attempt under a run.
const (
	TaskInProgress = "IN-PROGRESS"
	TaskSuccess    = "SUCCESS"
	TaskFailed     = "FAILED"
	TaskSkipped    = "SKIPPED"
	TaskCancelled  = "CANCELLED"
)

// Attempt statuses (AUD_TASK_ATTEMPTS.STATUS). QUEUED, CLAIMED and RUNNING
// are active; the others are terminal and immutable.
const (
	AttemptQueued    = "QUEUED"
	AttemptClaimed   = "CLAIMED"
	AttemptRunning   = "RUNNING"
	AttemptSuccess   = "SUCCESS"
	AttemptFailed    = "FAILED"
	AttemptTimedOut  = "TIMED_OUT"
	AttemptCancelled = "CANCELLED"
	AttemptLost      = "LOST"
)

// Trigger kinds (AUD_PIPELINES_RUN_LOG.TRIGGER_KIND).
const (
	TriggerManual       = "MANUAL"
	TriggerSchedule     = "SCHEDULE"
	TriggerBackfill     = "BACKFILL"
	TriggerOrchestrator = "ORCHESTRATOR"
	TriggerStandIn      = "STAND_IN"
)

// runEnded reports whether a run status is terminal.
func runEnded(status string) bool {
	return status != RunQueued && status != RunInProgress
}

// summaryOf returns the task-run status an attempt status reads as.
func summaryOf(attemptStatus string) string {
	switch attemptStatus {
	case AttemptQueued, AttemptClaimed, AttemptRunning:
		return TaskInProgress
	case AttemptTimedOut, AttemptLost:
		return TaskFailed
	}
	return attemptStatus
}
