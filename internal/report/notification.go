package report

// Notification is the document a webhook channel receives: one alert, a
// run's outcome as an EMAIL_ALERT task saw it (event run_alert) or a run
// that passed its SLA (event sla_breach), with what the email says.
type Notification struct {
	Schema string `json:"schema"`
	// Event is run_alert or sla_breach.
	Event string `json:"event"`
	// DeliveryID is the same for every try and attempt sending this alert
	// to this channel: a receiver drops a copy by it.
	DeliveryID string  `json:"delivery_id"`
	Channel    string  `json:"channel"`
	SentAt     Instant `json:"sent_at"`
	Subject    string  `json:"subject"`
	// Body is the alert task's EMAIL_BODY, its tokens replaced; "" for none.
	Body    string `json:"body"`
	Heading string `json:"heading"`
	// Text is the whole alert as the email's plain text.
	Text string `json:"text"`
	// Outcome is a run alert's FAILED, COMPLETED_WITH_ERRORS or SUCCESS.
	Outcome  *string              `json:"outcome"`
	Pipeline NotificationPipeline `json:"pipeline"`
	Run      Run                  `json:"run"`
	// AlertTask is the code of the task that sent a run alert.
	AlertTask *string            `json:"alert_task"`
	Tasks     []NotificationTask `json:"tasks"`
	// LatestRuns is the digest a run alert asked for (EMAIL_PIPELINES);
	// null when it asked for none.
	LatestRuns []Run `json:"latest_runs"`
	// Missing are the digest's codes without a latest run, with why.
	Missing []string `json:"missing"`
	// SLA is set for an SLA breach.
	SLA *NotificationSLA `json:"sla"`
	// ConsoleURL is the console's page of the run; null when none is known.
	ConsoleURL *string `json:"console_url"`
}

// NotificationPipeline is the pipeline of a notification.
type NotificationPipeline struct {
	ID          int64  `json:"pipeline_id"`
	Code        string `json:"pipeline_code"`
	Name        string `json:"pipeline_name"`
	Description string `json:"description"`
}

// NotificationTask is one task of a run alert's run.
type NotificationTask struct {
	TaskCode string `json:"task_code"`
	Handler  string `json:"handler"`
	// Status is the task run's status, NOT-RUN without one.
	Status string `json:"status"`
	// Attempts is null without a task run.
	Attempts     *int    `json:"attempts"`
	RowsWritten  *int64  `json:"rows_written"`
	ErrorMessage *string `json:"error_message"`
}

// NotificationSLA is when a run passed its SLA.
type NotificationSLA struct {
	Hours      float64 `json:"sla_hours"`
	StartedAt  Instant `json:"started_at"`
	BreachedAt Instant `json:"breached_at"`
	// Running is true when the run was still running then.
	Running bool `json:"running"`
}
