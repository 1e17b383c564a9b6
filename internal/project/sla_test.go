package project_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/quickstart"
	"github.com/etl-craft/etl-craft/internal/run"
)

// Under Orchestration.Enforce_sla a run that passes its SLA sends one SLA
// email, to the pipeline's EMAIL_RECIPIENTS, else to
// Orchestration.Email_recipients; without Enforce_sla the run is BREACHED
// all the same and no email is sent.
func TestSLAEmails(t *testing.T) {
	cfg := quickstartConfig(t)
	ctx := acting()
	srv := mailtest.Start(t, mailtest.Options{})
	cfg.Orchestration.Email = srv.Settings("etl@example.com")
	cfg.Orchestration.EmailRecipients = []string{"oncall@example.com"}
	runOnce := func() run.Outcome {
		t.Helper()
		p := openSetUp(t, cfg, project.WithoutCloneHook())
		defer p.Close()
		out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline})
		if err != nil || out.Status != run.RunSuccess {
			t.Fatalf("%q %v", out.String(), err)
		}
		var sla string
		if err := p.DB.QueryRowContext(ctx, "SELECT SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID).Scan(&sla); err != nil || sla != run.SLABreached {
			t.Fatalf("SLA_STATUS %q %v", sla, err)
		}
		return out
	}
	p := openSetUp(t, cfg, project.WithoutWarehouse())
	b := pipelinetest.New(t, p.DB)
	b.Exec(`UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 0.0000000001, PIPELINE_PARAMETERS = '{"EMAIL_RECIPIENTS": ["sla@example.com", "lead@example.com"]}'
		WHERE PIPELINE_CODE = $1`, quickstart.Pipeline)
	p.Close()

	runOnce()
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("without Enforce_sla %d SLA emails were sent", n)
	}
	cfg.Orchestration.EnforceSLA = true
	out := runOnce()
	msgs := srv.Messages()
	if len(msgs) != 1 || strings.Join(msgs[0].To, ",") != "sla@example.com,lead@example.com" {
		t.Fatalf("messages %+v", msgs)
	}
	m := mailtest.Parse(t, msgs[0].Data)
	want := "SLA breached: " + quickstart.Pipeline + " run "
	if m.Subject != fmt.Sprintf("%s%d (1e-10 h)", want, out.RunID) || !strings.Contains(m.Text, fmt.Sprintf("Run:       %d (run key ", out.RunID)) ||
		!strings.Contains(m.Text, "SLA:       1e-10 hour(s)") {
		t.Fatalf("subject %q text %q", m.Subject, m.Text)
	}

	p = openSetUp(t, cfg, project.WithoutWarehouse())
	pipelinetest.New(t, p.DB).Exec(`UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = NULL WHERE PIPELINE_CODE = $1`, quickstart.Pipeline)
	p.Close()
	runOnce()
	if msgs := srv.Messages(); len(msgs) != 2 || strings.Join(msgs[1].To, ",") != "oncall@example.com" {
		t.Fatalf("messages %+v", msgs)
	}
}

// A pipeline whose NOTIFY_CHANNELS names a channel Notifications has not
// still sends its SLA alert to its recipients and to the channels it names
// that exist; the unknown name is the error the supervisor logs.
func TestAnUnknownSLAChannelLosesNoOtherDestination(t *testing.T) {
	cfg := quickstartConfig(t)
	ctx := acting()
	srv := mailtest.Start(t, mailtest.Options{})
	hook := notifytest.Start(t)
	t.Setenv("SLA_HOOK_URL", hook.URL+"/sla")
	cfg.Orchestration.Email = srv.Settings("etl@example.com")
	cfg.Orchestration.EnforceSLA = true
	cfg.Notifications = config.Notifications{TimeoutSeconds: 10, Channels: []config.Channel{
		{Name: "pager", Kind: config.ChannelWebhook, URLVar: "SLA_HOOK_URL"}}}
	p := openSetUp(t, cfg, project.WithoutCloneHook())
	defer p.Close()
	pipelinetest.New(t, p.DB).Exec(`UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 0.0000000001,
		PIPELINE_PARAMETERS = '{"EMAIL_RECIPIENTS": ["sla@example.com"], "NOTIFY_CHANNELS": ["pagr", "pager"]}' WHERE PIPELINE_CODE = $1`,
		quickstart.Pipeline)
	out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline})
	if err != nil || out.Status != run.RunSuccess {
		t.Fatalf("%q %v", out.String(), err)
	}
	if msgs := srv.Messages(); len(msgs) != 1 || strings.Join(msgs[0].To, ",") != "sla@example.com" {
		t.Errorf("emails %+v", msgs)
	}
	if got := hook.WaitFor(t, 1); got[0].Header.Get(notify.HeaderEvent) != "sla_breach" {
		t.Errorf("the webhook got %s %s", got[0].Header, got[0].Body)
	}
}
