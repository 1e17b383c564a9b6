// Package email is the handler of EMAIL_ALERT tasks: each attempt sends one
// alert summarising the task's run (internal/alert) — its outcome (FAILED,
// COMPLETED_WITH_ERRORS or SUCCESS, decided from the run's other tasks), a
// table of those tasks with status, rows and errors, and optionally a digest
// of the latest runs of other pipelines — as an email over the transport of
// Orchestration.Email (internal/mail), plain text with an HTML alternative,
// and to the chat and webhook channels of Notifications (internal/notify).
//
// The parameters: EMAIL_TO (a pipe list of recipients) and NOTIFY_CHANNELS
// (a pipe list of channels), one of them at least; EMAIL_SUBJECT and
// EMAIL_BODY, their per-outcome overrides EMAIL_SUBJECT_<OUTCOME> and
// EMAIL_BODY_<OUTCOME>, EMAIL_ON_STATUS (the outcomes to send on; otherwise
// the task succeeds without sending) and EMAIL_PIPELINES (ALL or a pipe list
// of codes, for the digest). Subject and body may use the $$ tokens of
// alert.Summary.Tokens, and are the same in every channel. When the alert
// reaches some of its recipients and channels, the task is SUCCESS with an
// EMAIL_WARNING or NOTIFY_WARNING in its TASK_LOG for the others; when it
// reaches none, it fails.
package email

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/notify"
)

// The parameters of an EMAIL_ALERT task.
const (
	ParamTo        = "EMAIL_TO"
	ParamChannels  = "NOTIFY_CHANNELS"
	ParamSubject   = "EMAIL_SUBJECT"
	ParamBody      = "EMAIL_BODY"
	ParamOnStatus  = "EMAIL_ON_STATUS"
	ParamPipelines = "EMAIL_PIPELINES"
)

// Options are what an EMAIL_ALERT task sends with.
type Options struct {
	// Mail gives the mail sender of Orchestration.Email when an email is to
	// be sent (its error, such as settings that are missing or cannot be
	// used, fails the email).
	Mail func() (*mail.Sender, error)
	// Channels delivers to the channels of Notifications; nil when there
	// are none.
	Channels *notify.Notifier
	// RunPage gives the console's page of a run, "" when no console is
	// known; nil for none.
	RunPage func(runID int64) string
	// EnforceSLA is Orchestration.Enforce_sla, under which a run whose SLA
	// is already BREACHED is COMPLETED_WITH_ERRORS.
	EnforceSLA bool
}

// New returns the handler of EMAIL_ALERT tasks, reading runs from the Engine
// DB db. Check needs only o.Channels, to know the channels' names: validate
// may pass a nil db.
func New(db *engine.DB, o Options) handler.Handler {
	return emailHandler{db: db, opts: o}
}

type emailHandler struct {
	db   *engine.DB
	opts Options
}

// Check reviews an alert task's parameters for validate.
func (h emailHandler) Check(t *handler.Task) (failures, warnings []string) {
	_, failures, warnings = h.readSpec(t.Params)
	return failures, warnings
}

// spec is an alert task's parameters, read.
type spec struct {
	to        []string
	channels  []string
	onStatus  []alert.Outcome // nil: every outcome
	pipelines []string        // nil: no digest; [ALL]: every pipeline
	params    map[string]string
}

// readSpec reads and checks an alert task's parameters.
func (h emailHandler) readSpec(params map[string]string) (spec, []string, []string) {
	s := spec{to: pipeList(params[ParamTo]), channels: pipeList(params[ParamChannels]), pipelines: pipeList(params[ParamPipelines]), params: params}
	var failures, warnings []string
	if len(s.to) == 0 && len(s.channels) == 0 {
		failures = append(failures, ParamTo+" or "+ParamChannels+" is required: the recipients, or the channels of Notifications, separated by |")
	}
	for _, to := range s.to {
		if _, err := netmail.ParseAddress(to); err != nil {
			failures = append(failures, fmt.Sprintf("%s lists %q, which is not an address or Name <address>", ParamTo, to))
		}
	}
	for _, problem := range h.opts.Channels.Unknown(s.channels) {
		failures = append(failures, ParamChannels+" names "+problem)
	}
	if strings.TrimSpace(params[ParamSubject]) == "" {
		failures = append(failures, ParamSubject+" is required")
	}
	if strings.TrimSpace(params[ParamBody]) == "" && len(s.pipelines) == 0 {
		failures = append(failures, ParamBody+" is required unless "+ParamPipelines+" asks for a digest")
	}
	for _, w := range pipeList(params[ParamOnStatus]) {
		o := alert.Outcome(strings.ToUpper(w))
		if !slices.Contains(alert.Outcomes, o) {
			failures = append(failures, fmt.Sprintf("%s lists %q, which is not an outcome (%s)", ParamOnStatus, w, alert.OutcomeList()))
			continue
		}
		s.onStatus = append(s.onStatus, o)
	}
	if slices.ContainsFunc(s.pipelines, func(c string) bool { return strings.EqualFold(c, alert.AllPipelines) }) {
		s.pipelines = []string{alert.AllPipelines}
	}
	for name := range params {
		for _, base := range []string{ParamSubject + "_", ParamBody + "_"} {
			if o, ok := strings.CutPrefix(name, base); ok && !slices.Contains(alert.Outcomes, alert.Outcome(o)) {
				warnings = append(warnings, fmt.Sprintf("%s is not an override of any outcome (%s%s): it is never used",
					name, base, alert.OutcomeList()))
			}
		}
	}
	slices.Sort(warnings)
	return s, failures, warnings
}

// pipeList splits a pipe-separated list, trimming each item and dropping
// empty ones.
func pipeList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, "|") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// text returns the parameter for the outcome: NAME_<OUTCOME> when set, else
// NAME.
func (s spec) text(name string, o alert.Outcome) string {
	if v, ok := s.params[name+"_"+string(o)]; ok && strings.TrimSpace(v) != "" {
		return v
	}
	return s.params[name]
}

// Run performs one attempt: it decides the run's outcome and, unless
// EMAIL_ON_STATUS leaves it out, sends the alert to the recipients and the
// channels.
func (h emailHandler) Run(ctx context.Context, t *handler.Task) (handler.Result, error) {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, failures, warnings := h.readSpec(t.Params)
	for _, w := range warnings {
		log.Warn(w)
	}
	if len(failures) > 0 {
		return handler.Result{}, exit.Errorf(exit.Metadata, "the EMAIL_ALERT task %s: %s", t.TaskCode, strings.Join(failures, "; "))
	}
	if h.db == nil || (len(s.to) > 0 && h.opts.Mail == nil) {
		return handler.Result{}, exit.Errorf(exit.Handler, "the EMAIL_ALERT task %s has no Engine DB or mail sender to work with", t.TaskCode)
	}
	src := alert.Source{PipelineID: t.PipelineID, RunID: t.PipelineRunID, PipelineCode: t.PipelineCode, TaskCode: t.TaskCode}
	sum, err := alert.Summarise(ctx, h.db, src, h.opts.EnforceSLA)
	if err != nil {
		return handler.Result{}, err
	}
	reported := []handler.Reported{{Name: "EMAIL_OUTCOME", Value: string(sum.Outcome)}}
	if s.onStatus != nil && !slices.Contains(s.onStatus, sum.Outcome) {
		log.Info("no alert sent: the outcome is not in EMAIL_ON_STATUS", "outcome", sum.Outcome, "email_on_status", t.Params[ParamOnStatus])
		return handler.Result{Reported: append(reported, handler.Reported{Name: "EMAIL_SENT",
			Value: fmt.Sprintf("N (the outcome %s is not in %s %s)", sum.Outcome, ParamOnStatus, t.Params[ParamOnStatus])})}, nil
	}
	if len(s.pipelines) > 0 {
		if err := sum.ReadDigest(ctx, h.db, s.pipelines); err != nil {
			return handler.Result{}, err
		}
	}
	tokens := sum.Tokens()
	link := ""
	if h.opts.RunPage != nil {
		link = h.opts.RunPage(t.PipelineRunID)
	}
	msg := sum.Message(tokens.Replace(s.text(ParamSubject, sum.Outcome)), tokens.Replace(s.text(ParamBody, sum.Outcome)), link)
	var sent sending
	if len(s.to) > 0 {
		sent.email(ctx, log, h.opts.Mail, s.to, msg)
	}
	if len(s.channels) > 0 {
		sent.deliveries = h.opts.Channels.Send(ctx, log, msg, s.channels)
	}
	if err := sent.failure(t.TaskCode); err != nil {
		return handler.Result{}, err
	}
	reported = append(reported, sent.reported(s.to, msg.Subject)...)
	log.Info("alert sent", "outcome", sum.Outcome, "subject", msg.Subject, "email_refused", len(sent.refused),
		"channels", len(sent.deliveries))
	return handler.Result{Reported: reported}, nil
}

// sending is what sending one alert did.
type sending struct {
	// emailErr is why the email was not sent; nil when it was, or none
	// was to be.
	emailErr error
	emailed  bool
	refused  []mail.Refusal
	// deliveries are the channels' deliveries.
	deliveries []notify.Delivery
}

// email sends the alert to the recipients.
func (s *sending) email(ctx context.Context, log *slog.Logger, sender func() (*mail.Sender, error), to []string, m *alert.Message) {
	snd, err := sender()
	if err == nil {
		var res mail.Result
		res, err = snd.Send(ctx, mail.Message{To: to, Subject: m.Subject, Text: m.Text(), HTML: m.HTML()})
		s.refused = res.Refused
	}
	if err != nil {
		s.emailErr = err
		log.Warn("the email was not sent", "error", err)
		return
	}
	s.emailed = true
	if len(s.refused) > 0 {
		log.Warn(s.refusal())
	}
	log.Info("email sent", "refused", len(s.refused))
}

// refusal says which recipients the server refused.
func (s *sending) refusal() string {
	return "the server refused " + mail.Refused(s.refused)
}

// failure is the attempt's error when the alert reached no one: the email's
// own error when it was the only destination (as it always was), else every
// failure listed;
// its exit code is a configuration error's when every failure is one
// (trying again changes nothing), a handler error's otherwise.
func (s *sending) failure(task string) error {
	reached := s.emailed
	var errs []error
	if s.emailErr != nil {
		errs = append(errs, fmt.Errorf("email: %w", s.emailErr))
	}
	for _, d := range s.deliveries {
		if d.Err == nil {
			reached = true
			continue
		}
		errs = append(errs, fmt.Errorf("channel %s", d))
	}
	if reached {
		return nil
	}
	if len(errs) == 1 && s.emailErr != nil {
		if exit.CodeOf(s.emailErr) == exit.Configuration {
			return s.emailErr
		}
		return exit.Wrap(exit.Handler, s.emailErr, "the EMAIL_ALERT task %s could not send its email", task)
	}
	code := exit.Configuration
	for _, d := range s.deliveries {
		if d.Err != nil && exit.CodeOf(d.Err) != exit.Configuration {
			code = exit.Handler
		}
	}
	if s.emailErr != nil && exit.CodeOf(s.emailErr) != exit.Configuration {
		code = exit.Handler
	}
	return exit.Wrap(code, errors.Join(errs...), "the EMAIL_ALERT task %s reached none of its recipients and channels", task)
}

// reported are the TASK_LOG lines of an alert that reached someone.
func (s *sending) reported(to []string, subject string) []handler.Reported {
	var out []handler.Reported
	if len(to) > 0 {
		sent := "Y"
		if !s.emailed {
			sent = "N"
		}
		out = append(out, handler.Reported{Name: "EMAIL_SENT", Value: sent})
	}
	out = append(out, handler.Reported{Name: "EMAIL_SUBJECT", Value: subject})
	if s.emailed {
		out = append(out, handler.Reported{Name: "EMAIL_TO", Value: strings.Join(accepted(to, s.refused), "|")})
	}
	if s.emailErr != nil {
		out = append(out, handler.Reported{Name: "EMAIL_WARNING", Value: "the email was not sent: " + s.emailErr.Error()})
	}
	if len(s.refused) > 0 {
		out = append(out, handler.Reported{Name: "EMAIL_WARNING", Value: s.refusal()})
	}
	var delivered, failed []string
	for _, d := range s.deliveries {
		if d.Err == nil {
			delivered = append(delivered, d.Channel)
		} else {
			failed = append(failed, d.String())
		}
	}
	if len(delivered) > 0 {
		out = append(out, handler.Reported{Name: "NOTIFY_CHANNELS", Value: strings.Join(delivered, "|")})
	}
	if len(failed) > 0 {
		out = append(out, handler.Reported{Name: "NOTIFY_WARNING", Value: "not delivered to " + strings.Join(failed, "; ")})
	}
	return out
}

// accepted returns the recipients the server did not refuse.
func accepted(to []string, refused []mail.Refusal) []string {
	var out []string
	for _, r := range to {
		address := r
		if a, err := netmail.ParseAddress(r); err == nil {
			address = a.Address
		}
		if !slices.ContainsFunc(refused, func(f mail.Refusal) bool { return strings.EqualFold(address, f.Address) }) {
			out = append(out, r)
		}
	}
	return out
}
