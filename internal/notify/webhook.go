package notify

import (
	"encoding/json"
	"time"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/report"
)

// Webhook is m as the document a webhook channel receives,
// etl-craft/notification/1, sent to channel at sentAt. encoding/json
// writes <, > and & in its strings as \u003c, \u003e and \u0026, so a
// receiver that puts a value into a page unescaped still shows no markup.
func Webhook(m *alert.Message, channel string, sentAt time.Time) ([]byte, error) {
	doc := report.Notification{
		Schema:     report.SchemaNotification,
		Event:      string(m.Event),
		DeliveryID: DeliveryID(m, channel),
		Channel:    channel,
		SentAt:     report.Instant{Time: sentAt.UTC()},
		Subject:    m.Subject,
		Body:       m.Body,
		Heading:    m.Heading(),
		Text:       m.Text(),
		Pipeline: report.NotificationPipeline{ID: m.Pipeline.ID, Code: m.Pipeline.Code, Name: m.Pipeline.Name,
			Description: m.Pipeline.Description},
		Run:        inspect.RunDocument(m.Run),
		Tasks:      []report.NotificationTask{},
		ConsoleURL: optional(m.Link),
	}
	if m.Event == alert.RunAlert {
		doc.Outcome, doc.AlertTask = optional(string(m.Outcome)), optional(m.AlertTask)
	}
	for _, t := range m.Tasks {
		nt := report.NotificationTask{TaskCode: t.Code, Handler: t.Handler, Status: t.Status, RowsWritten: t.Rows,
			ErrorMessage: optional(t.Error)}
		if t.Status != alert.NotRun {
			nt.Attempts = &t.Attempts
		}
		doc.Tasks = append(doc.Tasks, nt)
	}
	if d := m.Digest; d != nil {
		doc.LatestRuns, doc.Missing = []report.Run{}, d.Missing
		for _, r := range d.Runs {
			doc.LatestRuns = append(doc.LatestRuns, inspect.RunDocument(r))
		}
	}
	if b := m.Breach; b != nil {
		doc.SLA = &report.NotificationSLA{Hours: b.Hours, StartedAt: report.Instant{Time: b.Start.UTC()},
			BreachedAt: report.Instant{Time: b.At.UTC()}, Running: b.Live}
	}
	return json.Marshal(doc)
}

// optional is s, or nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
