package run

import "github.com/etl-craft/etl-craft/internal/records"

// The status words of the run log, as the strings this package records and
// reports; the words and their meaning are records'.
const (
	// Run statuses (AUD_PIPELINES_RUN_LOG.STATUS).
	RunQueued     = string(records.RunQueued)
	RunInProgress = string(records.RunInProgress)
	RunSuccess    = string(records.RunSuccess)
	RunFailed     = string(records.RunFailed)
	RunSkipped    = string(records.RunSkipped)
	RunCancelled  = string(records.RunCancelled)

	// Task-run statuses (AUD_TASK_RUN_LOG.STATUS).
	TaskInProgress = string(records.TaskInProgress)
	TaskSuccess    = string(records.TaskSuccess)
	TaskFailed     = string(records.TaskFailed)
	TaskSkipped    = string(records.TaskSkipped)
	TaskCancelled  = string(records.TaskCancelled)

	// Attempt statuses (AUD_TASK_ATTEMPTS.STATUS).
	AttemptQueued    = string(records.AttemptQueued)
	AttemptClaimed   = string(records.AttemptClaimed)
	AttemptRunning   = string(records.AttemptRunning)
	AttemptSuccess   = string(records.AttemptSuccess)
	AttemptFailed    = string(records.AttemptFailed)
	AttemptTimedOut  = string(records.AttemptTimedOut)
	AttemptCancelled = string(records.AttemptCancelled)
	AttemptLost      = string(records.AttemptLost)

	// Trigger kinds (AUD_PIPELINES_RUN_LOG.TRIGGER_KIND).
	TriggerManual       = string(records.TriggerManual)
	TriggerSchedule     = string(records.TriggerSchedule)
	TriggerBackfill     = string(records.TriggerBackfill)
	TriggerOrchestrator = string(records.TriggerOrchestrator)
	TriggerStandIn      = string(records.TriggerStandIn)
)

// runEnded reports whether a run status is terminal.
func runEnded(status string) bool { return records.RunStatus(status).Ended() }

// summaryOf returns the task-run status an attempt status reads as.
func summaryOf(attemptStatus string) string {
	return string(records.AttemptStatus(attemptStatus).Summary())
}
