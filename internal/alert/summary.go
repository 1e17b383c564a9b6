package alert

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// AllPipelines asks a digest for every active pipeline.
const AllPipelines = "ALL"

// Source is the alert task whose run an alert summarises.
type Source struct {
	PipelineID, RunID      int64
	PipelineCode, TaskCode string
}

// Summary is what an alert task's run says: its outcome, its tasks and the
// errors the alert watches.
type Summary struct {
	Outcome Outcome
	src     Source
	graph   *pipeline.Graph
	run     records.Run
	self    int64
	rows    map[int64]records.TaskRun
	// watched are the errors of the failed or cancelled tasks the alert
	// watches through FAILURE dependencies, "code: message" each.
	watched []string
	digest  *Digest
}

// Summarise reads the alert task's run and its task runs, and decides the
// outcome; enforceSLA is Orchestration.Enforce_sla, under which a run whose
// SLA is already BREACHED is COMPLETED_WITH_ERRORS.
func Summarise(ctx context.Context, db *engine.DB, src Source, enforceSLA bool) (*Summary, error) {
	g, err := pipeline.Load(ctx, db, src.PipelineCode)
	if err != nil {
		return nil, err
	}
	r, err := records.SelectRun(ctx, db, src.PipelineID, src.PipelineCode, records.RunSelector{ID: src.RunID})
	if err != nil {
		return nil, err
	}
	rows, err := records.TaskRunsOf(ctx, db, src.RunID)
	if err != nil {
		return nil, err
	}
	s := &Summary{src: src, graph: g, run: r, rows: rows}
	if self, ok := g.FindTask(src.TaskCode); ok == nil {
		s.self = self.ID
		for _, d := range self.Deps {
			if d.Type != pipeline.Failure || d.CrossPipeline {
				continue
			}
			up, ok := rows[d.UpstreamTaskID]
			if ok && (up.Status == records.TaskFailed || up.Status == records.TaskCancelled) && up.ErrorMessage.String != "" {
				s.watched = append(s.watched, up.TaskCode+": "+up.ErrorMessage.String)
			}
		}
	}
	breached := enforceSLA && r.SLAStatus.Valid && records.SLAStatus(r.SLAStatus.String) == records.SLABreached
	s.Outcome = Decide(g, rows, breached)
	return s, nil
}

// ReadDigest reads the latest run of each active pipeline of codes
// ([AllPipelines] for every one), in code order, and says why a listed code
// has none.
func (s *Summary) ReadDigest(ctx context.Context, db *engine.DB, codes []string) error {
	latest, err := records.QueryRuns(ctx, db, "SELECT "+records.RunColumns+records.RunsFrom+
		`WHERE r.PIPELINE_RUN_ID IN (SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG GROUP BY PIPELINE_ID)`)
	if err != nil {
		return err
	}
	active, err := pipeline.List(ctx, db)
	if err != nil {
		return err
	}
	d := &Digest{}
	all := len(codes) == 1 && codes[0] == AllPipelines
	for _, p := range active {
		if !all && !slices.Contains(codes, p.Code) {
			continue
		}
		i := slices.IndexFunc(latest, func(r records.Run) bool { return r.PipelineID == p.ID })
		if i < 0 {
			d.Missing = append(d.Missing, p.Code+": never ran")
			continue
		}
		d.Runs = append(d.Runs, latest[i])
	}
	for _, c := range codes {
		if !all && !slices.ContainsFunc(active, func(p pipeline.Pipeline) bool { return p.Code == c }) {
			d.Missing = append(d.Missing, c+": no active pipeline has this code")
		}
	}
	s.digest = d
	return nil
}

// Tokens returns the replacer of the $$ tokens of subjects and bodies:
// $$status, $$pipeline_code, $$task_code, $$error_message (the errors of the
// failed tasks watched through FAILURE dependencies, one line each),
// $$pipeline_run_id (the run) and $$pipeline_id (the pipeline).
func (s *Summary) Tokens() *strings.Replacer {
	return strings.NewReplacer(
		"$$status", string(s.Outcome),
		"$$pipeline_code", s.src.PipelineCode,
		"$$task_code", s.src.TaskCode,
		"$$error_message", strings.Join(s.watched, "\n"),
		"$$pipeline_run_id", strconv.FormatInt(s.src.RunID, 10),
		"$$pipeline_id", strconv.FormatInt(s.src.PipelineID, 10),
	)
}

// Message is the alert of the summary with the subject and body (their
// tokens replaced), linking to link ("" for none).
func (s *Summary) Message(subject, body, link string) *Message {
	return &Message{
		Event:     RunAlert,
		Subject:   mail.Subject(subject),
		Body:      strings.TrimRight(body, "\n"),
		Outcome:   s.Outcome,
		Pipeline:  pipelineOf(s.graph.Pipeline),
		Run:       s.run,
		AlertTask: s.src.TaskCode,
		Tasks:     s.lines(),
		Digest:    s.digest,
		Link:      link,
	}
}

// lines returns the run's tasks in wave order, the alert itself left out.
// Only the errors of the tasks that count (counted) are given.
func (s *Summary) lines() []TaskLine {
	counted := counted(s.graph, s.rows)
	var out []TaskLine
	for _, wave := range s.graph.Waves() {
		for _, t := range wave {
			if t.ID == s.self {
				continue
			}
			l := TaskLine{Code: t.Code, Handler: t.Handler, Status: NotRun}
			if r, ok := s.rows[t.ID]; ok {
				l.Status, l.Attempts = string(r.Status), r.AttemptCount
				if counted[t.ID] {
					l.Error = r.ErrorMessage.String
				}
				if r.RowsWritten.Valid {
					l.Rows = &r.RowsWritten.Int64
				}
			}
			out = append(out, l)
		}
	}
	return out
}
