package notify

import (
	"github.com/etl-craft/etl-craft/internal/alert"
)

// The card a Teams workflow receives, and its bounds. Microsoft documents
// that a message sent to Teams through a webhook may be at most 28 KB
// (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using);
// a card stays under TeamsMaxBytes, leaving room for what the workflow adds,
// by leaving out tasks, errors and latest runs from the end, saying how many
// it left out. One text is cut at TeamsMaxText characters, so that the
// subject, body, heading and facts always fit.
const (
	TeamsCardVersion = "1.4"
	TeamsMaxBytes    = 24 << 10
	TeamsMaxText     = 2000
	// TeamsContentType is the content type of an Adaptive Card attachment.
	TeamsContentType = "application/vnd.microsoft.card.adaptive"
)

// teamsRun is an Adaptive Card TextRun: a text without Markdown ("Markdown
// is not supported" in a TextRun, says the schema), so a value is shown as
// written whatever it holds.
type teamsRun struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Weight   string `json:"weight,omitempty"`
	Size     string `json:"size,omitempty"`
	Color    string `json:"color,omitempty"`
	FontType string `json:"fontType,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
}

// teamsBlock is a RichTextBlock of TextRuns.
type teamsBlock struct {
	Type      string     `json:"type"`
	Inlines   []teamsRun `json:"inlines"`
	Separator bool       `json:"separator,omitempty"`
	Spacing   string     `json:"spacing,omitempty"`
}

// teamsAction is an Action.OpenUrl.
type teamsAction struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

// teamsCard is an Adaptive Card.
type teamsCard struct {
	Schema  string        `json:"$schema"`
	Type    string        `json:"type"`
	Version string        `json:"version"`
	Body    []teamsBlock  `json:"body"`
	Actions []teamsAction `json:"actions,omitempty"`
}

// teamsMessage is the body a Teams workflow's "When a Teams webhook request
// is received" trigger takes: a message with the card as an attachment.
type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

// run is a TextRun of s cut to TeamsMaxText.
func run(s string) teamsRun {
	return teamsRun{Type: "TextRun", Text: cut(s, TeamsMaxText, asIs, "-")}
}

// bold is a TextRun in bold.
func bold(s string) teamsRun {
	r := run(s)
	r.Weight = "Bolder"
	return r
}

// block is a RichTextBlock of the runs.
func block(runs ...teamsRun) teamsBlock { return teamsBlock{Type: "RichTextBlock", Inlines: runs} }

// outcomeColor is the color of a message's title: Attention for a failure,
// Warning for errors and SLA breaches, Good for a success.
func outcomeColor(m *alert.Message) string {
	switch {
	case m.Event == alert.SLABreach, m.Outcome == alert.CompletedWithErrors:
		return "Warning"
	case m.Outcome == alert.Failed:
		return "Attention"
	}
	return "Good"
}

// Teams is m as the message of a Teams workflow webhook: an Adaptive Card
// (version TeamsCardVersion) with the subject as its title, the body, the
// heading and the pipeline's description, the facts, then the tasks, their
// errors and the digest as the size bound allows, and a button opening the
// console's page of the run. Every text taken from the alert is a TextRun
// (no Markdown; a card renders no HTML).
func Teams(m *alert.Message) ([]byte, error) {
	title := bold(m.Subject)
	title.Size, title.Color = "Medium", outcomeColor(m)
	card := teamsCard{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: TeamsCardVersion}
	card.Body = append(card.Body, block(title))
	if m.Body != "" {
		card.Body = append(card.Body, block(run(m.Body)))
	}
	card.Body = append(card.Body, block(run(m.Heading())))
	if d := m.Pipeline.Description; d != "" {
		r := run(d)
		r.IsSubtle = true
		card.Body = append(card.Body, block(r))
	}
	for i, f := range m.Facts() {
		b := block(bold(f.Label+": "), run(f.Value))
		b.Separator, b.Spacing = i == 0, "None"
		card.Body = append(card.Body, b)
	}
	if m.Link != "" {
		card.Actions = []teamsAction{{Type: "Action.OpenUrl", Title: linkLabel(m), URL: m.Link}}
	}

	var optional []teamsBlock
	var left omitted
	for i, t := range m.Tasks {
		b := block(bold(t.Code), run(" · "+taskSummary(t)))
		b.Separator, b.Spacing = i == 0, "None"
		optional, left = append(optional, b), append(left, part{"tasks", 1})
	}
	for _, t := range m.Errors() {
		e := run(t.Error)
		e.FontType = "Monospace"
		optional, left = append(optional, block(bold(t.Code+": "), e)), append(left, part{"errors", 1})
	}
	if d := m.Digest; d != nil {
		h := block(bold("Latest runs"))
		h.Separator = true
		optional, left = append(optional, h), append(left, part{})
		for _, r := range d.Runs {
			optional, left = append(optional, block(bold(r.PipelineCode), run(" · "+digestSummary(alert.DigestCells(r))))), append(left, part{"latest runs", 1})
		}
		for _, miss := range d.Missing {
			optional, left = append(optional, block(run(miss))), append(left, part{})
		}
	}
	// The note of what was left out takes at most this much.
	const noteRoom = 400
	size, err := teamsSize(card)
	if err != nil {
		return nil, err
	}
	shown := 0
	for ; shown < len(optional); shown++ {
		b, err := encode(optional[shown])
		if err != nil {
			return nil, err
		}
		if size+len(b)+1+noteRoom > TeamsMaxBytes {
			break
		}
		size += len(b) + 1
	}
	card.Body = append(card.Body, optional[:shown]...)
	if note := left[shown:].String(); note != "" {
		r := run(note)
		r.IsSubtle = true
		card.Body = append(card.Body, block(r))
	}
	return encode(teamsEnvelope(card))
}

// teamsEnvelope wraps the card as the workflow's message.
func teamsEnvelope(card teamsCard) teamsMessage {
	return teamsMessage{Type: "message", Attachments: []teamsAttachment{{ContentType: TeamsContentType, Content: card}}}
}

// teamsSize is the size of the message of card.
func teamsSize(card teamsCard) (int, error) {
	b, err := encode(teamsEnvelope(card))
	return len(b), err
}
