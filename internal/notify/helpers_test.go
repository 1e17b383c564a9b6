package notify_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// secretPath is the secret part of every channel URL the tests use: no
// error or log line may show it.
const secretPath = "/services/T0SECRET/B0SECRET/xoxSeCrEtToKeN"

// env are the variables of the secrets source the channels read.
type env map[string]string

func (e env) secret(name string) (string, error) {
	v, ok := e[name]
	if !ok {
		return "", &missing{name}
	}
	return v, nil
}

type missing struct{ name string }

func (m *missing) Error() string {
	return "secret '" + m.name + "' not found in the environment source"
}

// notifier returns a notifier of the channels, each sending to its
// receiver's URL with secretPath, and retrying after 10 ms.
func notifier(retries int, channels ...channel) (*notify.Notifier, env) {
	vars := env{}
	n := config.Notifications{TimeoutSeconds: 5, Retries: retries}
	for _, c := range channels {
		vars[strings.ToUpper(c.name)+"_URL"] = c.r.URL + secretPath
		cc := config.Channel{Name: c.name, Kind: c.kind, URLVar: strings.ToUpper(c.name) + "_URL", CAFile: c.caFile}
		if c.signing != "" {
			cc.SigningSecretVar = strings.ToUpper(c.name) + "_SIGNING"
			vars[cc.SigningSecretVar] = c.signing
		}
		n.Channels = append(n.Channels, cc)
	}
	return notify.New(n, vars.secret).WithBackoff(10 * time.Millisecond), vars
}

// channel is a channel of a test and its receiver.
type channel struct {
	name, kind string
	r          *notifytest.Receiver
	signing    string
	caFile     string
}

// logger returns a logger writing to the buffer.
func logger() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

// hostile is a text meant to be acted on: Slack mentions and links,
// Markdown, and HTML.
const hostile = "*bold* _it_ ~gone~ `code` <!channel> <@U123> <https://evil.example/|click> & **strong** [link](https://evil.example/) " +
	"<script>alert(1)</script> <b>x</b> :fire:"

// message returns a run alert of pipeline SALES, run 42, with tasks
// tasks, each fifth failed with err.
func message(tasks int, err string) *alert.Message {
	m := &alert.Message{
		Event: alert.RunAlert, Subject: "[FAILED] SALES run 42", Body: "The nightly load ended.", Outcome: alert.Failed,
		Pipeline: alert.Pipeline{ID: 7, Code: "SALES", Name: "Sales", Description: "Daily sales"},
		Run: records.Run{ID: 42, PipelineID: 7, PipelineCode: "SALES", Key: "manual:2026-03-01T06:00:00Z", RunDate: "2026-03-01",
			Status: records.RunInProgress, TriggerKind: records.TriggerManual,
			Start: records.Time{Time: time.Date(2026, 3, 1, 6, 0, 5, 0, time.UTC), Valid: true}},
		AlertTask: "alert",
		Link:      "https://etl.example.com/runs/42",
	}
	for i := range tasks {
		t := alert.TaskLine{Code: "task_" + strconv.Itoa(i), Handler: "SQL", Status: string(records.TaskSuccess), Attempts: 1}
		if i%5 == 0 {
			t.Status, t.Attempts, t.Error = string(records.TaskFailed), 2, err
		}
		m.Tasks = append(m.Tasks, t)
	}
	return m
}
