// Package email is the handler of EMAIL_ALERT tasks: each attempt sends one
// email summarising the task's run — its outcome (FAILED,
// COMPLETED_WITH_ERRORS or SUCCESS, decided from the run's other tasks), a
// table of those tasks with status, rows and errors, and optionally a digest
// of the latest runs of other pipelines — as plain text with an HTML
// alternative, over the transport of Orchestration.Email (internal/mail).
//
// The parameters: EMAIL_TO (a pipe list), EMAIL_SUBJECT and EMAIL_BODY,
// their per-outcome overrides EMAIL_SUBJECT_<OUTCOME> and
// EMAIL_BODY_<OUTCOME>, EMAIL_ON_STATUS (the outcomes to send on; otherwise
// the task succeeds without sending) and EMAIL_PIPELINES (ALL or a pipe list
// of codes, for the digest). Subject and body may use the $$ tokens of
// Tokens. A server that refuses some recipients leaves the task SUCCESS
// with an EMAIL_WARNING in its TASK_LOG; refusing them all fails it.
package email

import (
	"context"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The parameters of an EMAIL_ALERT task.
const (
	ParamTo        = "EMAIL_TO"
	ParamSubject   = "EMAIL_SUBJECT"
	ParamBody      = "EMAIL_BODY"
	ParamOnStatus  = "EMAIL_ON_STATUS"
	ParamPipelines = "EMAIL_PIPELINES"
)

// AllPipelines is the EMAIL_PIPELINES value that digests every active
// pipeline.
const AllPipelines = "ALL"

// New returns the handler of EMAIL_ALERT tasks, reading runs from the Engine
// DB db. sender gives the mail sender of Orchestration.Email when a message
// is to be sent (its error, such as settings that are missing or cannot be
// used, fails the attempt); enforceSLA is Orchestration.Enforce_sla, under
// which a run whose SLA is already BREACHED is COMPLETED_WITH_ERRORS. Check
// needs neither: validate may pass nil for both.
func New(db *engine.DB, sender func() (*mail.Sender, error), enforceSLA bool) handler.Handler {
	return emailHandler{db: db, sender: sender, enforceSLA: enforceSLA}
}

type emailHandler struct {
	db         *engine.DB
	sender     func() (*mail.Sender, error)
	enforceSLA bool
}

// Check reviews an alert task's parameters for validate.
func (emailHandler) Check(t *handler.Task) (failures, warnings []string) {
	_, failures, warnings = readSpec(t.Params)
	return failures, warnings
}

// spec is an alert task's parameters, read.
type spec struct {
	to        []string
	onStatus  []Outcome // nil: every outcome
	pipelines []string  // nil: no digest; [ALL]: every pipeline
	params    map[string]string
}

// readSpec reads and checks an alert task's parameters.
func readSpec(params map[string]string) (spec, []string, []string) {
	s := spec{to: pipeList(params[ParamTo]), pipelines: pipeList(params[ParamPipelines]), params: params}
	var failures, warnings []string
	if len(s.to) == 0 {
		failures = append(failures, ParamTo+" is required: the recipients, separated by |")
	}
	for _, to := range s.to {
		if _, err := netmail.ParseAddress(to); err != nil {
			failures = append(failures, fmt.Sprintf("%s lists %q, which is not an address or Name <address>", ParamTo, to))
		}
	}
	if strings.TrimSpace(params[ParamSubject]) == "" {
		failures = append(failures, ParamSubject+" is required")
	}
	if strings.TrimSpace(params[ParamBody]) == "" && len(s.pipelines) == 0 {
		failures = append(failures, ParamBody+" is required unless "+ParamPipelines+" asks for a digest")
	}
	for _, w := range pipeList(params[ParamOnStatus]) {
		o := Outcome(strings.ToUpper(w))
		if !slices.Contains(Outcomes, o) {
			failures = append(failures, fmt.Sprintf("%s lists %q, which is not an outcome (%s)", ParamOnStatus, w, outcomeList()))
			continue
		}
		s.onStatus = append(s.onStatus, o)
	}
	if slices.ContainsFunc(s.pipelines, func(c string) bool { return strings.EqualFold(c, AllPipelines) }) {
		s.pipelines = []string{AllPipelines}
	}
	for name := range params {
		for _, base := range []string{ParamSubject + "_", ParamBody + "_"} {
			if o, ok := strings.CutPrefix(name, base); ok && !slices.Contains(Outcomes, Outcome(o)) {
				warnings = append(warnings, fmt.Sprintf("%s is not an override of any outcome (%s%s): it is never used",
					name, base, outcomeList()))
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
func (s spec) text(name string, o Outcome) string {
	if v, ok := s.params[name+"_"+string(o)]; ok && strings.TrimSpace(v) != "" {
		return v
	}
	return s.params[name]
}

// Run performs one attempt: it decides the run's outcome and, unless
// EMAIL_ON_STATUS leaves it out, sends the email.
func (h emailHandler) Run(ctx context.Context, t *handler.Task) (handler.Result, error) {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, failures, warnings := readSpec(t.Params)
	for _, w := range warnings {
		log.Warn(w)
	}
	if len(failures) > 0 {
		return handler.Result{}, exit.Errorf(exit.Metadata, "the EMAIL_ALERT task %s: %s", t.TaskCode, strings.Join(failures, "; "))
	}
	if h.db == nil || h.sender == nil {
		return handler.Result{}, exit.Errorf(exit.Handler, "the EMAIL_ALERT task %s has no Engine DB or mail sender to work with", t.TaskCode)
	}
	sum, err := summarise(ctx, h.db, t, h.enforceSLA)
	if err != nil {
		return handler.Result{}, err
	}
	reported := []handler.Reported{{Name: "EMAIL_OUTCOME", Value: string(sum.outcome)}}
	if s.onStatus != nil && !slices.Contains(s.onStatus, sum.outcome) {
		log.Info("no email sent: the outcome is not in EMAIL_ON_STATUS", "outcome", sum.outcome, "email_on_status", t.Params[ParamOnStatus])
		return handler.Result{Reported: append(reported, handler.Reported{Name: "EMAIL_SENT",
			Value: fmt.Sprintf("N (the outcome %s is not in %s %s)", sum.outcome, ParamOnStatus, t.Params[ParamOnStatus])})}, nil
	}
	if len(s.pipelines) > 0 {
		if sum.digest, sum.missing, err = digest(ctx, h.db, s.pipelines); err != nil {
			return handler.Result{}, err
		}
	}
	tokens := sum.tokens(t)
	msg := mail.Message{To: s.to, Subject: tokens.Replace(s.text(ParamSubject, sum.outcome))}
	msg.Text, msg.HTML = sum.render(tokens.Replace(s.text(ParamBody, sum.outcome)))
	sender, err := h.sender()
	if err != nil {
		return handler.Result{}, err
	}
	res, err := sender.Send(ctx, msg)
	if err != nil {
		return handler.Result{}, exit.Wrap(exit.Handler, err, "the EMAIL_ALERT task %s could not send its email", t.TaskCode)
	}
	reported = append(reported, handler.Reported{Name: "EMAIL_SENT", Value: "Y"},
		handler.Reported{Name: "EMAIL_SUBJECT", Value: res.Subject},
		handler.Reported{Name: "EMAIL_TO", Value: strings.Join(accepted(s.to, res.Refused), "|")})
	if len(res.Refused) > 0 {
		var refused []string
		for _, r := range res.Refused {
			refused = append(refused, r.Address+" ("+r.Reply+")")
		}
		warning := "the server refused " + strings.Join(refused, ", ")
		log.Warn(warning)
		reported = append(reported, handler.Reported{Name: "EMAIL_WARNING", Value: warning})
	}
	log.Info("email sent", "outcome", sum.outcome, "subject", res.Subject, "refused", len(res.Refused))
	return handler.Result{Reported: reported}, nil
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

// summary is what the email says of the run.
type summary struct {
	outcome Outcome
	graph   *pipeline.Graph
	run     records.Run
	self    int64
	rows    map[int64]records.TaskRun
	// watched are the errors of the failed or cancelled tasks the alert
	// watches through FAILURE dependencies, "code: message" each.
	watched []string
	digest  []records.Run
	// missing are the EMAIL_PIPELINES codes without a latest run, each with
	// the reason.
	missing []string
}

// summarise reads the alert's run and its task runs, and decides the
// outcome.
func summarise(ctx context.Context, db *engine.DB, t *handler.Task, enforceSLA bool) (*summary, error) {
	g, err := pipeline.Load(ctx, db, t.PipelineCode)
	if err != nil {
		return nil, err
	}
	r, err := records.SelectRun(ctx, db, t.PipelineID, t.PipelineCode, records.RunSelector{ID: t.PipelineRunID})
	if err != nil {
		return nil, err
	}
	rows, err := records.TaskRunsOf(ctx, db, t.PipelineRunID)
	if err != nil {
		return nil, err
	}
	sum := &summary{graph: g, run: r, rows: rows}
	if self, ok := g.FindTask(t.TaskCode); ok == nil {
		sum.self = self.ID
		for _, d := range self.Deps {
			if d.Type != pipeline.Failure || d.CrossPipeline {
				continue
			}
			up, ok := rows[d.UpstreamTaskID]
			if ok && (up.Status == records.TaskFailed || up.Status == records.TaskCancelled) && up.ErrorMessage.String != "" {
				sum.watched = append(sum.watched, up.TaskCode+": "+up.ErrorMessage.String)
			}
		}
	}
	breached := enforceSLA && r.SLAStatus.Valid && records.SLAStatus(r.SLAStatus.String) == records.SLABreached
	sum.outcome = Decide(g, rows, breached)
	return sum, nil
}

// digest reads the latest run of each active pipeline of EMAIL_PIPELINES,
// in code order, and says why a listed code has none.
func digest(ctx context.Context, db *engine.DB, codes []string) (runs []records.Run, missing []string, err error) {
	latest, err := records.QueryRuns(ctx, db, "SELECT "+records.RunColumns+records.RunsFrom+
		`WHERE r.PIPELINE_RUN_ID IN (SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG GROUP BY PIPELINE_ID)`)
	if err != nil {
		return nil, nil, err
	}
	active, err := pipeline.List(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	all := len(codes) == 1 && codes[0] == AllPipelines
	for _, p := range active {
		if !all && !slices.Contains(codes, p.Code) {
			continue
		}
		i := slices.IndexFunc(latest, func(r records.Run) bool { return r.PipelineID == p.ID })
		if i < 0 {
			missing = append(missing, p.Code+": never ran")
			continue
		}
		runs = append(runs, latest[i])
	}
	for _, c := range codes {
		if !all && !slices.ContainsFunc(active, func(p pipeline.Pipeline) bool { return p.Code == c }) {
			missing = append(missing, c+": no active pipeline has this code")
		}
	}
	return runs, missing, nil
}
