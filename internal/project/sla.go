package project

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/pipeline"
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
		// A setting that cannot be used loses none of the destinations
		// the others give.
		var errs []error
		to, err := dag.EmailRecipients(b.Pipeline, cfg.Orchestration)
		if err != nil {
			errs = append(errs, err)
		}
		channels, err := p.slaChannels(b.Pipeline)
		if err != nil {
			errs = append(errs, err)
		}
		if len(to) == 0 && len(channels) == 0 {
			return errors.Join(append(errs, exit.Errorf(exit.Configuration,
				"pipeline %s passed its SLA but has no one to tell: set EMAIL_RECIPIENTS or NOTIFY_CHANNELS in its PIPELINE_PARAMETERS, "+
					"or Orchestration.Email_recipients or Notifications.Sla_channels in %s", b.Pipeline.Code, cfg.Path))...)
		}
		msg := alert.Breached(b.Pipeline, p.breachedRun(ctx, b), alert.Breach{Hours: b.Pipeline.SLAHours.Float64, Start: b.Start, At: b.At, Live: b.Live},
			p.RunPage(b.RunID))
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

// slaChannels are the channels of the pipeline's SLA breaches that exist:
// its PIPELINE_PARAMETERS.NOTIFY_CHANNELS, else Notifications.Sla_channels.
// The error names what cannot be used: a parameter that is no list of
// names (Sla_channels are used instead, as Orchestration.Email_recipients
// are for an EMAIL_RECIPIENTS that is no list), or a name no channel has.
func (p *Project) slaChannels(pl pipeline.Pipeline) ([]string, error) {
	channels, err := dag.NotifyChannels(pl, p.Config.Notifications.SLAChannels)
	if err != nil {
		return channels, err
	}
	problems := p.channels.Unknown(channels)
	if len(problems) == 0 {
		return channels, nil
	}
	known := slices.DeleteFunc(slices.Clone(channels), func(name string) bool {
		_, ok := p.Config.Notifications.Channel(name)
		return !ok
	})
	return known, exit.Errorf(exit.Metadata, "CFG_PIPELINES.PIPELINE_PARAMETERS of %s: NOTIFY_CHANNELS names %s",
		pl.Code, strings.Join(problems, "; "))
}

// CheckPipeline returns, for validate, what is wrong with the pipeline's
// settings that the project's configuration decides: the channels of its
// SLA breaches.
func (p *Project) CheckPipeline(pl pipeline.Pipeline) []string {
	if _, err := p.slaChannels(pl); err != nil {
		return []string{err.Error()}
	}
	return nil
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
