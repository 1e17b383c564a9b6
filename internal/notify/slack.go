package notify

import (
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/alert"
)

// Slack's documented limits of a message and its blocks
// (https://api.slack.com/reference/block-kit/blocks and
// https://api.slack.com/reference/block-kit/composition-objects#text): a
// message holds at most 50 blocks; a header's text at most 150 characters; a
// section's text, and any other text object, at most 3000; a section has at
// most 10 fields of at most 2000 characters each; a context block at most 10
// elements. A longer text is cut, never refused.
const (
	SlackMaxBlocks        = 50
	SlackMaxHeader        = 150
	SlackMaxText          = 3000
	SlackMaxFields        = 10
	SlackMaxField         = 2000
	SlackMaxContextBlocks = 10
)

// slackText is a Block Kit text object.
type slackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji,omitempty"`
}

// slackBlock is a Block Kit block: a header, section, context or divider.
type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

// slackMessage is the body of an incoming webhook's request: the text of
// notifications, and the blocks the message shows.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

// slackEscape escapes the three characters Slack reads as control
// characters in every text (https://api.slack.com/reference/surfaces/formatting#escaping):
// so a text's <!channel> or <https://…|link> is shown, never acted on.
func slackEscape(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

var noEmoji = false

// plain is a plain_text object of s, escaped and cut to max: Slack applies
// no formatting to plain text, so *bold*, _italics_ and `code` in a value
// are shown as written, and :emoji: codes are left as they are.
func plain(s string, max int) slackText {
	return slackText{Type: "plain_text", Text: cut(s, max, slackEscape, "-"), Emoji: &noEmoji}
}

// section is a section block with a plain text.
func section(s string) slackBlock {
	t := plain(s, SlackMaxText)
	return slackBlock{Type: "section", Text: &t}
}

// Slack is m as an incoming webhook's Block Kit message: the subject as a
// header, the body, the heading and the pipeline's description; the facts
// as fields; then the tasks (two fields each), their errors and the digest,
// as many as the block limit leaves room for, saying how many more there
// are; and a link to the console's page of the run. Every text taken from
// the alert is plain text (see plain).
func Slack(m *alert.Message) ([]byte, error) {
	msg := slackMessage{Text: cut(m.Subject, SlackMaxText, slackEscape, "-")}
	add := func(b ...slackBlock) { msg.Blocks = append(msg.Blocks, b...) }
	add(slackBlock{Type: "header", Text: &slackText{Type: "plain_text", Text: cut(m.Subject, SlackMaxHeader, slackEscape, "-"), Emoji: &noEmoji}})
	if m.Body != "" {
		add(section(m.Body))
	}
	add(section(m.Heading()))
	if d := m.Pipeline.Description; d != "" {
		add(slackBlock{Type: "context", Elements: []slackText{plain(d, SlackMaxText)}})
	}
	facts := slackBlock{Type: "section"}
	for _, f := range m.Facts()[:min(len(m.Facts()), SlackMaxFields)] {
		facts.Fields = append(facts.Fields, plain(f.Label+": "+f.Value, SlackMaxField))
	}
	add(facts)

	// What may be left out, in order; room keeps a block for the link and
	// one for saying what was left out.
	var optional []slackBlock
	var left omitted
	if len(m.Tasks) > 0 {
		optional, left = append(optional, slackBlock{Type: "divider"}), append(left, part{})
	}
	for chunk := range slices.Chunk(m.Tasks, SlackMaxFields/2) {
		b := slackBlock{Type: "section"}
		for _, t := range chunk {
			b.Fields = append(b.Fields, plain(t.Code, SlackMaxField), plain(taskSummary(t), SlackMaxField))
		}
		optional, left = append(optional, b), append(left, part{"tasks", len(chunk)})
	}
	for _, t := range m.Errors() {
		optional, left = append(optional, section(t.Code+": "+t.Error)), append(left, part{"errors", 1})
	}
	if d := m.Digest; d != nil {
		optional, left = append(optional, section("Latest runs")), append(left, part{})
		for chunk := range slices.Chunk(d.Runs, SlackMaxFields/2) {
			b := slackBlock{Type: "section"}
			for _, r := range chunk {
				b.Fields = append(b.Fields, plain(r.PipelineCode, SlackMaxField), plain(digestSummary(alert.DigestCells(r)), SlackMaxField))
			}
			optional, left = append(optional, b), append(left, part{"latest runs", len(chunk)})
		}
		if len(d.Missing) > 0 {
			optional, left = append(optional, section(strings.Join(d.Missing, "\n"))), append(left, part{})
		}
	}
	shown := min(SlackMaxBlocks-len(msg.Blocks)-2, len(optional))
	add(optional[:shown]...)
	if note := left[shown:].String(); note != "" {
		add(slackBlock{Type: "context", Elements: []slackText{plain(note, SlackMaxText)}})
	}
	if m.Link != "" {
		link := "<" + cut(m.Link, SlackMaxText-100, slackEscape, "") + "|" + linkLabel(m) + ">"
		add(slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: link}})
	}
	return encode(msg)
}
