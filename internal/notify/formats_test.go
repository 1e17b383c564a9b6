package notify_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The shapes Slack documents for an incoming webhook's message, as the
// test checks them:
//   - https://api.slack.com/reference/block-kit/blocks: at most 50 blocks
//     in a message; a header block's text is plain_text of at most 150
//     characters; a section's text at most 3000 characters, its fields at
//     most 10, each at most 2000; a context block's elements at most 10;
//     a divider has nothing else.
//   - https://api.slack.com/reference/block-kit/composition-objects#text:
//     a text object's type is plain_text or mrkdwn, its text 1 to 3000
//     characters; emoji applies to plain_text only.
//   - https://api.slack.com/messaging/webhooks: the body is JSON with text
//     (the notification's text) and blocks.
//
// Lengths are counted in UTF-16 code units, never less than characters.
type slackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text"`
	Fields   []slackText `json:"fields"`
	Elements []slackText `json:"elements"`
}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

// checkSlack decodes a Slack payload strictly and checks it against the
// documented shape, returning it.
func checkSlack(t *testing.T, payload []byte) slackMessage {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var m slackMessage
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("the Slack payload is not the documented shape: %v\n%s", err, payload)
	}
	length := func(s string) int { return len(utf16.Encode([]rune(s))) }
	text := func(where string, o slackText, max int) {
		if o.Type != "plain_text" && o.Type != "mrkdwn" {
			t.Errorf("%s: text type %q", where, o.Type)
		}
		if n := length(o.Text); n < 1 || n > max {
			t.Errorf("%s: text of %d characters, want 1 to %d", where, n, max)
		}
		if o.Emoji != nil && o.Type != "plain_text" {
			t.Errorf("%s: emoji on %s", where, o.Type)
		}
	}
	if n := length(m.Text); n < 1 || n > 3000 {
		t.Errorf("text of %d characters", n)
	}
	if len(m.Blocks) == 0 || len(m.Blocks) > 50 {
		t.Errorf("%d blocks, want 1 to 50", len(m.Blocks))
	}
	for i, b := range m.Blocks {
		where := b.Type + " block " + string(rune('0'+i/10)) + string(rune('0'+i%10))
		switch b.Type {
		case "header":
			if b.Text == nil || b.Text.Type != "plain_text" || b.Fields != nil || b.Elements != nil {
				t.Errorf("%s: %+v", where, b)
			} else {
				text(where, *b.Text, 150)
			}
		case "section":
			if b.Text == nil && len(b.Fields) == 0 || b.Elements != nil {
				t.Errorf("%s: neither text nor fields", where)
			}
			if b.Text != nil {
				text(where, *b.Text, 3000)
			}
			if len(b.Fields) > 10 {
				t.Errorf("%s: %d fields", where, len(b.Fields))
			}
			for _, f := range b.Fields {
				text(where+" field", f, 2000)
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 || b.Text != nil || b.Fields != nil {
				t.Errorf("%s: %+v", where, b)
			}
			for _, e := range b.Elements {
				text(where+" element", e, 3000)
			}
		case "divider":
			if b.Text != nil || b.Fields != nil || b.Elements != nil {
				t.Errorf("%s: %+v", where, b)
			}
		default:
			t.Errorf("%s: a block type the message does not use", where)
		}
	}
	return m
}

// texts returns every text object of a Slack message with its type.
func (m slackMessage) texts() []slackText {
	var out []slackText
	for _, b := range m.Blocks {
		if b.Text != nil {
			out = append(out, *b.Text)
		}
		out = append(append(out, b.Fields...), b.Elements...)
	}
	return out
}

// long is a text far past every limit, with characters that count twice
// and characters Slack escapes.
var long = strings.Repeat("a<b>&c 🎉 ", 2000)

func TestSlackMessagesKeepSlacksDocumentedLimitsAndCutLongTexts(t *testing.T) {
	t.Parallel()
	m := message(12, "Catalog Error: Table with name raw_orders does not exist!")
	msg := checkSlack(t, mustRender(t, notify.Slack, m))
	if msg.Text != "[FAILED] SALES run 42" || msg.Blocks[0].Text.Text != "[FAILED] SALES run 42" {
		t.Errorf("text %q, header %+v", msg.Text, msg.Blocks[0])
	}
	var all []string
	for _, o := range msg.texts() {
		all = append(all, o.Text)
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"The nightly load ended.", "Pipeline SALES, run 42 (manual:2026-03-01T06:00:00Z, run date 2026-03-01, started 2026-03-01 06:00:05 UTC): FAILED",
		"Daily sales", "Outcome: FAILED", "Pipeline: SALES (Sales)", "task_5", "SQL · FAILED · 2 attempts",
		"task_10: Catalog Error: Table with name raw_orders does not exist!", "<https://etl.example.com/runs/42|Open run 42 in the console>"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the message lacks %q:\n%s", want, joined)
		}
	}

	// Every text far too long, and too many tasks and errors: the message
	// is cut to the limits, never refused, and says what it left out.
	m = message(300, long)
	m.Subject, m.Body, m.Pipeline.Description = long, long, long
	msg = checkSlack(t, mustRender(t, notify.Slack, m))
	if len(msg.Blocks) != 50 {
		t.Errorf("%d blocks, want the 50 a message may have", len(msg.Blocks))
	}
	header := msg.Blocks[0].Text.Text
	if !strings.HasSuffix(header, "…") || !strings.HasPrefix(header, "a&lt;b&gt;&amp;c 🎉 a&lt;") {
		t.Errorf("header %q", header)
	}
	if strings.Contains(header, "&l…") || strings.Contains(header, "&am…") {
		t.Errorf("the cut splits an escape: %q", header)
	}
	note := msg.Blocks[48].Elements
	if msg.Blocks[48].Type != "context" || len(note) != 1 ||
		!strings.HasSuffix(note[0].Text, "more tasks and 60 more errors are not shown: the email and the console show them all") {
		t.Errorf("the note of what was left out: %+v", msg.Blocks[48])
	}
	if last := msg.Blocks[49]; last.Text == nil || last.Text.Type != "mrkdwn" || !strings.Contains(last.Text.Text, "/runs/42|") {
		t.Errorf("the link is not the last block: %+v", last)
	}
}

// teamsSchema compiles the Adaptive Card schema in testdata (see
// testdata/README.md for its source).
func teamsSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.NewCompiler().Compile("testdata/adaptive-card-1.4.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// teamsMessage is the body a Teams workflow gets.
type teamsMessage struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string          `json:"contentType"`
		ContentURL  *string         `json:"contentUrl"`
		Content     json.RawMessage `json:"content"`
	} `json:"attachments"`
}

// checkTeams checks a Teams payload: the message with one Adaptive Card
// attachment, the card valid against the schema, the whole under the 28 KB
// Microsoft documents for a webhook's message; it returns the card.
func checkTeams(t *testing.T, schema *jsonschema.Schema, payload []byte) map[string]any {
	t.Helper()
	if len(payload) > 28*1024 {
		t.Errorf("the message has %d bytes, over the 28 KB Teams takes", len(payload))
	}
	var m teamsMessage
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || m.Type != "message" || len(m.Attachments) != 1 ||
		m.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("not a Teams message with one card (%v):\n%s", err, payload)
	}
	card, err := jsonschema.UnmarshalJSON(bytes.NewReader(m.Attachments[0].Content))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(card); err != nil {
		t.Fatalf("the card does not match the Adaptive Card schema: %v\n%s", err, m.Attachments[0].Content)
	}
	c := card.(map[string]any)
	if c["type"] != "AdaptiveCard" || c["version"] != "1.4" {
		t.Errorf("card %v %v", c["type"], c["version"])
	}
	return c
}

// runs returns the text of every TextRun of a card, and fails the test on
// any other text: a TextBlock's text would be read as Markdown.
func runs(t *testing.T, card map[string]any) []string {
	t.Helper()
	var out []string
	for _, b := range card["body"].([]any) {
		block := b.(map[string]any)
		if block["type"] != "RichTextBlock" {
			t.Errorf("the card has a %v, whose text may be read as Markdown", block["type"])
			continue
		}
		for _, in := range block["inlines"].([]any) {
			out = append(out, in.(map[string]any)["text"].(string))
		}
	}
	return out
}

func TestTeamsCardsMatchTheAdaptiveCardSchema(t *testing.T) {
	t.Parallel()
	schema := teamsSchema(t)
	// The schema bites: a TextRun with a property it does not have fails.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"type": "AdaptiveCard", "version": "1.4", "body": [{"type": "RichTextBlock",
		"inlines": [{"type": "TextRun", "text": "x", "markdown": true}]}]}`))
	if schema.Validate(bad) == nil {
		t.Fatal("the schema takes a TextRun with a markdown property")
	}
	m := message(12, "Catalog Error: Table with name raw_orders does not exist!")
	m.Digest = &alert.Digest{Runs: []records.Run{m.Run}, Missing: []string{"R: never ran"}}
	card := checkTeams(t, schema, mustRender(t, notify.Teams, m))
	texts := strings.Join(runs(t, card), "")
	for _, want := range []string{"[FAILED] SALES run 42", "The nightly load ended.", "Daily sales", "Outcome: FAILED",
		"task_5 · SQL · FAILED · 2 attempts", "task_10: Catalog Error: Table with name raw_orders does not exist!",
		"Latest runs", "SALES · run 42 · IN-PROGRESS · started 2026-03-01 06:00:05 UTC", "R: never ran"} {
		if !strings.Contains(texts, want) {
			t.Errorf("the card lacks %q:\n%s", want, texts)
		}
	}
	actions, _ := card["actions"].([]any)
	if len(actions) != 1 || actions[0].(map[string]any)["url"] != "https://etl.example.com/runs/42" {
		t.Errorf("actions %v", actions)
	}

	sla := alert.Breached(pipeline.Pipeline{ID: 7, Code: "SALES", Name: "Sales"}, m.Run,
		alert.Breach{Hours: 1.5, Start: m.Run.Start.Time, At: m.Run.Start.Time.Add(2 * time.Hour), Live: true}, "")
	card = checkTeams(t, schema, mustRender(t, notify.Teams, sla))
	if texts := strings.Join(runs(t, card), ""); !strings.Contains(texts, "SLA breached: SALES run 42 (1.5 h)") ||
		!strings.Contains(texts, "Breached: 2026-03-01T08:00:05Z, after 2h0m0s") || card["actions"] != nil {
		t.Errorf("the SLA card: %s %v", texts, card["actions"])
	}

	// Far too much: the card stays under Teams' size, and says what it left
	// out.
	m = message(300, long)
	m.Subject, m.Body, m.Pipeline.Description = long, long, long
	card = checkTeams(t, schema, mustRender(t, notify.Teams, m))
	all := runs(t, card)
	if last := all[len(all)-1]; !strings.Contains(last, "more tasks and 60 more errors are not shown") &&
		!strings.Contains(last, "more errors are not shown") {
		t.Errorf("the last text is %q", last)
	}
	if title := all[0]; !strings.HasSuffix(title, "…") || len(utf16.Encode([]rune(title))) > notify.TeamsMaxText {
		t.Errorf("title of %d characters", len(title))
	}
}

func mustRender(t *testing.T, render func(*alert.Message) ([]byte, error), m *alert.Message) []byte {
	t.Helper()
	b, err := render(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
