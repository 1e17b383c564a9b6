package project

import (
	"context"
	"errors"
	"fmt"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/run"
)

// slaAlert returns what the supervisor does with an SLA breach under
// Orchestration.Enforce_sla: one alert per breached run, sent as an email to
// the pipeline's EMAIL_RECIPIENTS parameter, else
// Orchestration.Email_recipients, and to its channels: its NOTIFY_CHANNELS
// parameter, else Notifications.Sla_channels. Without Enforce_sla it is
// nil, and a breach is only recorded and logged. A recipient refused or a
// channel that did not take the alert is an error, which the supervisor
// logs; the others got the alert.
func (p *Project) slaAlert() func(context.Context, run.Breach) error {
	cfg := p.Config
	if !cfg.Orchestration.EnforceSLA {
		return nil
	}
	return func(ctx context.Context, b run.Breach) error {
		to, err := dag.EmailRecipients(b.Pipeline, cfg.Orchestration)
		if err != nil {
			return err
		}
		channels, err := dag.NotifyChannels(b.Pipeline, cfg.Notifications.SLAChannels)
		if err != nil {
			return err
		}
		if problems := p.channels.Unknown(channels); len(problems) > 0 {
			return exit.Errorf(exit.Metadata, "CFG_PIPELINES.PIPELINE_PARAMETERS of %s: NOTIFY_CHANNELS names %s", b.Pipeline.Code, problems[0])
		}
		if len(to) == 0 && len(channels) == 0 {
			return exit.Errorf(exit.Configuration,
				"pipeline %s passed its SLA but has no one to tell: set EMAIL_RECIPIENTS or NOTIFY_CHANNELS in its PIPELINE_PARAMETERS, "+
					"or Orchestration.Email_recipients or Notifications.Sla_channels in %s", b.Pipeline.Code, cfg.Path)
		}
		msg := alert.Breached(b.Pipeline, p.breachedRun(ctx, b), alert.Breach{Hours: b.Pipeline.SLAHours.Float64, Start: b.Start, At: b.At, Live: b.Live},
			p.RunPage(b.RunID))
		var errs []error
		if len(to) > 0 {
			errs = append(errs, p.slaEmail(ctx, msg, to))
		}
		for _, d := range p.channels.Send(ctx, p.set.log, msg, channels) {
			if d.Err != nil {
				errs = append(errs, fmt.Errorf("the SLA alert of pipeline %s was not delivered to channel %s", b.Pipeline.Code, d))
			}
		}
		return errors.Join(errs...)
	}
}

// breachedRun reads the breached run; what the breach says of it when it
// cannot be read.
func (p *Project) breachedRun(ctx context.Context, b run.Breach) records.Run {
	r, err := records.SelectRun(ctx, p.DB, b.Pipeline.ID, b.Pipeline.Code, records.RunSelector{ID: b.RunID})
	if err != nil {
		p.set.log.Warn("could not read the breached run; its alert says what the breach knows", "pipeline_run_id", b.RunID, "error", err)
		return records.Run{ID: b.RunID, PipelineID: b.Pipeline.ID, PipelineCode: b.Pipeline.Code, Key: b.RunKey,
			Start: records.Time{Time: b.Start, Valid: true}}
	}
	return r
}

// slaEmail sends the SLA alert as an email to the recipients.
func (p *Project) slaEmail(ctx context.Context, msg *alert.Message, to []string) error {
	s, err := p.mail()
	if err != nil {
		return err
	}
	res, err := s.Send(ctx, mail.Message{To: to, Subject: msg.Subject, Text: msg.Text(), HTML: msg.HTML()})
	if err == nil && len(res.Refused) > 0 {
		err = exit.Errorf(exit.Handler, "the SLA email of pipeline %s was refused for %s", msg.Pipeline.Code, mail.Refused(res.Refused))
	}
	return err
}
