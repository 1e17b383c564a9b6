package notify_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/report"
)

// A pipeline description, a body and an error full of Slack markup,
// Markdown and HTML are shown as written in every format, never acted on:
// Slack gets them as plain_text with &, < and > escaped (Slack's own
// escaping), Teams as TextRuns (no Markdown) in a card (no HTML), the
// webhook as JSON strings with <, > and & escaped, and the email's HTML
// escaped while its plain text keeps them.
func TestHostileTextIsShownAsWrittenInEveryFormat(t *testing.T) {
	t.Parallel()
	m := message(3, hostile)
	m.Body, m.Pipeline.Description = hostile, hostile
	escaped := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(hostile)

	t.Run("slack", func(t *testing.T) {
		msg := checkSlack(t, mustRender(t, notify.Slack, m))
		found := 0
		for _, o := range msg.texts() {
			if o.Type == "mrkdwn" {
				if o.Text != "<https://etl.example.com/runs/42|Open run 42 in the console>" {
					t.Errorf("a mrkdwn text other than the link: %q", o.Text)
				}
				continue
			}
			if o.Emoji == nil || *o.Emoji {
				t.Errorf("plain text %q turns :codes: into emoji", o.Text)
			}
			if strings.ContainsAny(o.Text, "<>") {
				t.Errorf("an unescaped < or > in %q", o.Text)
			}
			if strings.Contains(o.Text, escaped) {
				found++
			}
		}
		// The body, the description and one error.
		if found != 3 {
			t.Errorf("the hostile text is shown, escaped, %d times, want 3", found)
		}
	})

	t.Run("teams", func(t *testing.T) {
		card := checkTeams(t, teamsSchema(t), mustRender(t, notify.Teams, m))
		found := 0
		for _, text := range runs(t, card) { // every text is a TextRun
			if strings.Contains(text, hostile) {
				found++
			}
		}
		if found != 3 {
			t.Errorf("the hostile text is shown as written %d times, want 3", found)
		}
	})

	t.Run("webhook", func(t *testing.T) {
		body, err := notify.Webhook(m, "pager", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(body, "<>") || !bytes.Contains(body, []byte(`\u003cscript\u003e`)) {
			t.Errorf("the document holds < or > unescaped:\n%s", body)
		}
		var doc report.Notification
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Pipeline.Description != hostile || doc.Body != hostile || *doc.Tasks[0].ErrorMessage != hostile {
			t.Errorf("the values read back differ: %+v", doc)
		}
	})

	t.Run("email", func(t *testing.T) {
		h := m.HTML()
		if strings.Contains(h, "<script>") || strings.Contains(h, "<b>x</b>") || !strings.Contains(h, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("HTML:\n%s", h)
		}
		if !strings.Contains(m.Text(), "\n"+hostile+"\n") {
			t.Errorf("the plain text does not show the description as written:\n%s", m.Text())
		}
	})
}
