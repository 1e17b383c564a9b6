package project

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/run"
)

// slaMail returns what the supervisor does with an SLA breach under
// Orchestration.Enforce_sla: one email per breached run to the pipeline's
// EMAIL_RECIPIENTS parameter, else Orchestration.Email_recipients. Without
// Enforce_sla it is nil, and a breach is only recorded and logged.
func slaMail(cfg *config.Config, sender func() (*mail.Sender, error)) func(context.Context, run.Breach) error {
	if !cfg.Orchestration.EnforceSLA {
		return nil
	}
	return func(ctx context.Context, b run.Breach) error {
		to, err := dag.EmailRecipients(b.Pipeline, cfg.Orchestration)
		if err != nil {
			return err
		}
		if len(to) == 0 {
			return exit.Errorf(exit.Configuration,
				"pipeline %s passed its SLA but has no one to tell: set EMAIL_RECIPIENTS in its PIPELINE_PARAMETERS or Orchestration.Email_recipients in %s",
				b.Pipeline.Code, cfg.Path)
		}
		s, err := sender()
		if err != nil {
			return err
		}
		res, err := s.Send(ctx, slaMessage(b, to))
		if err == nil && len(res.Refused) > 0 {
			var refused []string
			for _, r := range res.Refused {
				refused = append(refused, r.Address+" ("+r.Reply+")")
			}
			err = exit.Errorf(exit.Handler, "the SLA email of pipeline %s was refused for %s", b.Pipeline.Code, strings.Join(refused, ", "))
		}
		return err
	}
}

// slaMessage is the SLA email of a breach.
func slaMessage(b run.Breach, to []string) mail.Message {
	when := "is still running"
	if !b.Live {
		when = "ended"
	}
	elapsed := b.At.Sub(b.Start).Round(time.Second)
	var text strings.Builder
	fmt.Fprintf(&text, "Pipeline %s passed its SLA of %g hour(s): pipeline_run_id=%d %s.\n\n", b.Pipeline.Code, b.Pipeline.SLAHours.Float64, b.RunID, when)
	fmt.Fprintf(&text, "Pipeline:  %s (%s)\n", b.Pipeline.Code, b.Pipeline.Name)
	fmt.Fprintf(&text, "Run:       %d (run key %s)\n", b.RunID, b.RunKey)
	fmt.Fprintf(&text, "Started:   %s\n", b.Start.UTC().Format(time.RFC3339))
	fmt.Fprintf(&text, "Breached:  %s, after %s\n", b.At.UTC().Format(time.RFC3339), elapsed)
	fmt.Fprintf(&text, "SLA:       %g hour(s)\n", b.Pipeline.SLAHours.Float64)
	return mail.Message{
		To:      to,
		Subject: fmt.Sprintf("SLA breached: %s run %d (%g h)", b.Pipeline.Code, b.RunID, b.Pipeline.SLAHours.Float64),
		Text:    text.String(),
	}
}
