package concurrency_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// alertSigning is the webhook channel's signing secret.
const alertSigning = "whsec-eight-at-once"

// alerting is a project whose alerts go to a Slack channel data-team, a
// signed webhook pager and a mail server.
type alerting struct {
	*e2e.Project
	slack, hook *notifytest.Receiver
	mail        *mailtest.Server
	db          *engine.DB
}

// newAlerting writes the project on the Engine DB of kind, with
// Max_parallel_tasks 8, the channels tried once more after a failure, and
// a request timeout long enough for a receiver holding its answers.
func newAlerting(t *testing.T, kind engine.Kind) *alerting {
	a := &alerting{slack: notifytest.Start(t), hook: notifytest.Start(t), mail: mailtest.Start(t, mailtest.Options{})}
	a.Project = e2e.New(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, `Notifications:
  Timeout_seconds: 120
  Retries: 1
  Channels:
    data-team: {kind: slack, url: SLACK_URL}
    pager: {kind: webhook, url: PAGER_URL, signing_secret: PAGER_SIGNING_SECRET}
`)
	a.Env = append(a.Env, "SLACK_URL="+a.slack.URL+"/services/T/B/x", "PAGER_URL="+a.hook.URL+"/etl", "PAGER_SIGNING_SECRET="+alertSigning)
	a.Orchestration(fmt.Sprintf("  Max_parallel_tasks: %d\n  Email:\n    host: %s\n    port: %d\n    from_address: etl@example.com\n    tls_mode: none\n",
		lanes, a.mail.Host, a.mail.Port))
	a.OK("init-db")
	a.db = a.DB()
	return a
}

// alertTask is the alert of a lane: an email to the lane's address and a
// message to both channels.
func alertTask(lane int) e2e.Task {
	return e2e.Task{Code: fmt.Sprintf("alert_%d", lane), Handler: "EMAIL_ALERT", Params: map[string]string{
		"EMAIL_TO": fmt.Sprintf("lane%d@example.com", lane), "NOTIFY_CHANNELS": "data-team|pager",
		"EMAIL_SUBJECT": fmt.Sprintf("lane %d", lane), "EMAIL_BODY": "the lane ran"}}
}

// deliveries groups a receiver's requests by delivery id, checking each
// webhook request's signature.
func deliveries(t *testing.T, reqs []notifytest.Request, signed bool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range reqs {
		if signed {
			mac := hmac.New(sha256.New, []byte(alertSigning))
			mac.Write([]byte(r.Header.Get("X-Etl-Craft-Timestamp") + "."))
			mac.Write(r.Body)
			if r.Header.Get("X-Etl-Craft-Signature") != "v1="+hex.EncodeToString(mac.Sum(nil)) {
				t.Errorf("a request with a bad signature: %s", r.Header)
			}
		}
		out[r.Header.Get("X-Etl-Craft-Delivery")]++
	}
	return out
}

// Eight alert tasks at once, each sending an email and a message to a Slack
// channel and a signed webhook, under one run and then under the server:
// both receivers hold their answers until all eight deliveries are in
// flight, and the webhook answers the first eight 503, so that every
// delivery is tried again at once. Every alert reaches every destination
// exactly once per round: eight Slack messages, each webhook delivery
// twice (the 503 and its retry, the same id and a valid signature each),
// eight emails; every attempt succeeds the first time.
func TestEightAlertsToChannelsAtOnce(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		t.Parallel()
		a := newAlerting(t, kind)
		tasks := make([]e2e.Task, lanes)
		for lane := range tasks {
			tasks[lane] = alertTask(lane + 1)
		}
		a.Register("0001_alerts", e2e.Pipeline("ALERTS", tasks...))
		token := a.Token("ops", "operator")
		for round := 1; round <= 2; round++ {
			a.slack.HoldUntil(lanes)
			a.hook.HoldUntil(lanes)
			busy := make([]notifytest.Reply, lanes)
			for i := range busy {
				busy[i] = notifytest.Reply{Status: 503, Body: "busy"}
			}
			a.hook.Script(busy...)
			if round == 1 {
				a.OK("run", "--pipeline_code", "ALERTS")
			} else {
				s := a.StartServer()
				e2e.WaitRunsEnded(t, a.db, s.Trigger(token, "ALERTS"))
				if code := s.Stop(); code != 0 {
					t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
				}
			}
			a.checkRound(t, round)
		}
	})
}

// checkRound checks what the rounds so far sent.
func (a *alerting) checkRound(t *testing.T, round int) {
	t.Helper()
	if bad := e2e.QueryRows(t, a.db, "SELECT PIPELINE_RUN_ID, STATUS FROM AUD_PIPELINES_RUN_LOG WHERE STATUS <> $1", records.RunSuccess); len(bad) > 0 {
		t.Fatalf("runs that did not succeed: %q", bad)
	}
	if n := e2e.Count(t, a.db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = $1 AND ATTEMPT_NUMBER = 1", records.AttemptSuccess); n != round*lanes {
		t.Fatalf("%d first attempts succeeded after round %d, want %d", n, round, round*lanes)
	}
	if logs := e2e.QueryRows(t, a.db, "SELECT TASK_LOG FROM AUD_TASK_RUN_LOG"); len(logs) != round*lanes ||
		slices.ContainsFunc(logs, func(l string) bool { return !strings.Contains(l, "NOTIFY_CHANNELS = data-team|pager") }) {
		t.Fatalf("task logs:\n%s", strings.Join(logs, "\n"))
	}
	if p := a.slack.Peak(); p != lanes {
		t.Errorf("at most %d Slack deliveries were in flight at once, want %d", p, lanes)
	}
	slack := deliveries(t, a.slack.Got(), false)
	hook := deliveries(t, a.hook.Got(), true)
	if len(slack) != round*lanes || len(hook) != round*lanes {
		t.Fatalf("%d Slack and %d webhook deliveries after round %d, want %d each", len(slack), len(hook), round, round*lanes)
	}
	for id, n := range slack {
		if n != 1 {
			t.Errorf("Slack got delivery %s %d times", id, n)
		}
	}
	for id, n := range hook {
		if n != 2 {
			t.Errorf("the webhook got delivery %s %d times, want the 503 and its retry", id, n)
		}
	}
	if n := len(a.mail.Messages()); n != round*lanes {
		t.Errorf("%d emails after round %d", n, round)
	}
}

// A server killed with kill -9 while an alert is being delivered: the
// webhook holds its answer, so the attempt dies with the request in
// flight, after Slack took the alert. The next server fences the attempt
// LOST and, as the task's RETRIES allow, sends the alert again: each
// channel then has it twice, with the same delivery id (the at-least-once
// delivery docs/alerts.md states), and no alert is lost.
func TestAKilledDeliveryIsSentAgainWithTheSameID(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		t.Parallel()
		a := newAlerting(t, kind)
		a.hook.Script(notifytest.Reply{Status: 200, Wait: e2e.Patience})
		task := alertTask(1)
		task.Params["RETRIES"], task.Params["RETRY_DELAY_SECONDS"] = "1", "0"
		a.Register("0001_alert", e2e.Pipeline("ALERT", task))
		token := a.Token("ops", "operator")

		s := a.StartServer()
		id := s.Trigger(token, "ALERT")
		a.hook.WaitFor(t, 1)
		a.slack.WaitFor(t, 1)
		s.Kill()
		s = a.StartServer()
		if got := e2e.WaitRunsEnded(t, a.db, id); got[id] != records.RunSuccess {
			t.Fatalf("the run ended %s:\n%s", got[id], s.Stderr())
		}
		if code := s.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
		}
		attempts := e2e.QueryRows(t, a.db, "SELECT ATTEMPT_NUMBER, STATUS FROM AUD_TASK_ATTEMPTS ORDER BY ATTEMPT_NUMBER")
		if want := []string{"1 " + string(records.AttemptLost), "2 " + string(records.AttemptSuccess)}; !slices.Equal(attempts, want) {
			t.Fatalf("attempts %q, want %q", attempts, want)
		}
		for name, r := range map[string]*notifytest.Receiver{"Slack": a.slack, "the webhook": a.hook} {
			got := deliveries(t, r.Got(), r == a.hook)
			if len(got) != 1 {
				t.Fatalf("%s got %d deliveries, want one alert's", name, len(got))
			}
			for _, n := range got {
				if n != 2 {
					t.Errorf("%s got the alert %d times, want the killed attempt's and the retry's", name, n)
				}
			}
		}
	})
}
