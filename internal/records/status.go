package records

// RunStatus is a run's status (AUD_PIPELINES_RUN_LOG.STATUS).
type RunStatus string

// Run statuses. QUEUED and IN-PROGRESS are active; the others are terminal.
const (
	RunQueued     RunStatus = "QUEUED"
	RunInProgress RunStatus = "IN-PROGRESS"
	RunSuccess    RunStatus = "SUCCESS"
	RunFailed     RunStatus = "FAILED"
	RunSkipped    RunStatus = "SKIPPED"
	RunCancelled  RunStatus = "CANCELLED"
)

// Ended reports whether the run status is terminal: neither QUEUED nor
// IN-PROGRESS.
func (s RunStatus) Ended() bool { return s != RunQueued && s != RunInProgress }

// SLAStatus is a run's SLA status (AUD_PIPELINES_RUN_LOG.SLA_STATUS), set
// when its pipeline has SLA_IN_HOURS.
type SLAStatus string

// SLA statuses.
const (
	SLAMet      SLAStatus = "MET"
	SLABreached SLAStatus = "BREACHED"
)

// TaskRunStatus is a task run's status (AUD_TASK_RUN_LOG.STATUS): the
// summary of the task's latest attempt under a run. It is never QUEUED.
type TaskRunStatus string

// Task-run statuses.
const (
	TaskInProgress TaskRunStatus = "IN-PROGRESS"
	TaskSuccess    TaskRunStatus = "SUCCESS"
	TaskFailed     TaskRunStatus = "FAILED"
	TaskSkipped    TaskRunStatus = "SKIPPED"
	TaskCancelled  TaskRunStatus = "CANCELLED"
)

// RuleRunStatus is a business rule's run status
// (AUD_BUSINESS_RULES_RUN_LOG.STATUS).
type RuleRunStatus string

// Business-rule run statuses.
const (
	RuleInProgress RuleRunStatus = "IN-PROGRESS"
	RuleSuccess    RuleRunStatus = "SUCCESS"
	RuleFailed     RuleRunStatus = "FAILED"
	RuleSkipped    RuleRunStatus = "SKIPPED"
)

// AttemptStatus is an attempt's status (AUD_TASK_ATTEMPTS.STATUS).
type AttemptStatus string

// Attempt statuses. QUEUED, CLAIMED and RUNNING are active; the others are
// terminal and immutable.
const (
	AttemptQueued    AttemptStatus = "QUEUED"
	AttemptClaimed   AttemptStatus = "CLAIMED"
	AttemptRunning   AttemptStatus = "RUNNING"
	AttemptSuccess   AttemptStatus = "SUCCESS"
	AttemptFailed    AttemptStatus = "FAILED"
	AttemptTimedOut  AttemptStatus = "TIMED_OUT"
	AttemptCancelled AttemptStatus = "CANCELLED"
	AttemptLost      AttemptStatus = "LOST"
)

// Summary returns the task-run status an attempt status reads as: an active
// attempt is IN-PROGRESS, a timed-out or lost one FAILED.
func (s AttemptStatus) Summary() TaskRunStatus {
	switch s {
	case AttemptQueued, AttemptClaimed, AttemptRunning:
		return TaskInProgress
	case AttemptTimedOut, AttemptLost:
		return TaskFailed
	}
	return TaskRunStatus(s)
}

// Ended reports whether the attempt status is terminal: neither QUEUED,
// CLAIMED nor RUNNING.
func (s AttemptStatus) Ended() bool { return s.Summary() != TaskInProgress }

// ActionReopen is the AUD_RUN_INTERVENTIONS.ACTION of an ended run put
// back IN-PROGRESS for an operator's change.
const ActionReopen = "REOPEN"

// GateResult is what a gate decided for one dependency
// (AUD_GATE_DECISIONS.RESULT).
type GateResult string

// Gate results.
const (
	GateSatisfied   GateResult = "SATISFIED"
	GateUnsatisfied GateResult = "UNSATISFIED"
	// GateBypassed means Dependency_gates let the dependency through without
	// it being satisfied; a bypassed decision is never consumed.
	GateBypassed GateResult = "BYPASSED"
)

// TriggerKind says what started a run (AUD_PIPELINES_RUN_LOG.TRIGGER_KIND).
type TriggerKind string

// Trigger kinds.
const (
	TriggerManual       TriggerKind = "MANUAL"
	TriggerSchedule     TriggerKind = "SCHEDULE"
	TriggerBackfill     TriggerKind = "BACKFILL"
	TriggerOrchestrator TriggerKind = "ORCHESTRATOR"
	TriggerStandIn      TriggerKind = "STAND_IN"
)

// InterventionAction is what an operator change to a run did
// (AUD_RUN_INTERVENTIONS.ACTION).
type InterventionAction string

// InterventionNewRun records a run made on purpose: a schedule tick's (its
// note, requested by the schedule), a stand-in run or a run skipped on
// purpose.
const InterventionNewRun InterventionAction = "NEW_RUN"

// SQL returns the words as a list of SQL string literals, such as 'A', 'B',
// for a query constant: `STATUS IN (` + SQL(RunSuccess, RunFailed) + `)`.
func SQL[S ~string](words ...S) string { return quoted(words...) }

// SQL lists of statuses for IN (…) conditions in query constants.
var (
	// SQLEndedRuns lists the terminal run statuses.
	SQLEndedRuns = SQL(RunSuccess, RunFailed, RunSkipped, RunCancelled)
	// SQLEndedTasks lists the terminal task-run statuses.
	SQLEndedTasks = SQL(TaskSuccess, TaskFailed, TaskSkipped, TaskCancelled)
	// SQLActiveAttempts lists the active attempt statuses.
	SQLActiveAttempts = SQL(AttemptQueued, AttemptClaimed, AttemptRunning)
)
