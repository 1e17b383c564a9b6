package report

// Token is one HTTP API token as it is now (a CFG_API_TOKENS row, never its
// hash). Value, the token itself, is there only in the answer to create.
type Token struct {
	Schema    string   `json:"schema"`
	TokenID   int64    `json:"token_id"`
	Name      string   `json:"name"`
	Role      string   `json:"role"`
	State     string   `json:"state"`
	CreatedBy string   `json:"created_by"`
	CreatedAt Instant  `json:"created_at"`
	ExpiresAt *Instant `json:"expires_at"`
	RevokedAt *Instant `json:"revoked_at"`
	Value     string   `json:"value,omitempty"`
}

// Tokens is every HTTP API token, by id.
type Tokens struct {
	Schema string  `json:"schema"`
	Tokens []Token `json:"tokens"`
}
