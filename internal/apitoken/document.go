package apitoken

import (
	"time"

	"github.com/etl-craft/etl-craft/internal/report"
)

// Document returns the token's document as it stands at now
// (etl-craft/token/1), never with its value.
func (t Token) Document(now time.Time) report.Token {
	instant := func(t *time.Time) *report.Instant {
		if t == nil {
			return nil
		}
		return &report.Instant{Time: *t}
	}
	return report.Token{Schema: report.SchemaToken, TokenID: t.ID, Name: t.Name, Role: string(t.Role), State: string(t.StateAt(now)),
		CreatedBy: t.CreatedBy, CreatedAt: report.Instant{Time: t.CreatedAt}, ExpiresAt: instant(t.ExpiresAt), RevokedAt: instant(t.RevokedAt)}
}

// Documents returns every token's document at now (etl-craft/tokens/1).
func Documents(tokens []Token, now time.Time) report.Tokens {
	doc := report.Tokens{Schema: report.SchemaTokens, Tokens: make([]report.Token, len(tokens))}
	for i, t := range tokens {
		doc.Tokens[i] = t.Document(now)
	}
	return doc
}
