package cli_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// tokenLinePattern is a line of token list and create:
// `<id> <name> <role> expires=<ts> revoked=<ts>`.
var tokenLinePattern = regexp.MustCompile(`^([0-9]+) (\S+) (viewer|operator|admin) expires=(\S*) revoked=(\S*)$`)

// tokenLine is one parsed line of token output.
type tokenLine struct {
	id                     int64
	name, role             string
	expires, revoked       string
	expiresAt, revokedTime time.Time
}

func parseTokenLine(t *testing.T, line string) tokenLine {
	t.Helper()
	m := tokenLinePattern.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%q is not a token line", line)
	}
	l := tokenLine{name: m[2], role: m[3], expires: m[4], revoked: m[5]}
	l.id, _ = strconv.ParseInt(m[1], 10, 64)
	for _, ts := range []struct {
		text string
		into *time.Time
	}{{l.expires, &l.expiresAt}, {l.revoked, &l.revokedTime}} {
		if ts.text == "" {
			continue
		}
		v, err := time.Parse("2006-01-02T15:04:05-07:00", ts.text)
		if err != nil || !strings.HasSuffix(ts.text, "+00:00") {
			t.Fatalf("%q in %q is not a UTC time with its offset: %v", ts.text, line, err)
		}
		*ts.into = v
	}
	return l
}

// tokenDocument is the etl-craft/token/1 document as the tests read it.
type tokenDocument struct {
	Schema    string  `json:"schema"`
	TokenID   int64   `json:"token_id"`
	Name      string  `json:"name"`
	Role      string  `json:"role"`
	State     string  `json:"state"`
	CreatedBy string  `json:"created_by"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt *string `json:"expires_at"`
	RevokedAt *string `json:"revoked_at"`
	Value     *string `json:"value"`
}

// I16: token create prints a long random value once and stores only its
// SHA-256; list never shows a value; revoke, expiry, refusals with their
// exit statuses, and the masked requests in AUD_ACTIONS.
func TestTokenCommands(t *testing.T) {
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		db := p.DB()
		alice := []string{"ETL_CRAFT_ACTOR=alice@test"}
		var values []string
		// every run's output is checked for the token values at the end.
		var outputs []string
		run := func(args ...string) e2e.Result {
			t.Helper()
			r := p.Run(alice, args...)
			outputs = append(outputs, r.Stdout+r.Stderr)
			return r
		}

		before := time.Now().UTC().Add(-time.Second)
		r := run("token", "create", "--name", "chat-bot", "--role", "operator", "--expires", "90d", "--log-level", "DEBUG")
		lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
		if r.Code != 0 || len(lines) != 2 {
			t.Fatalf("create: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		bot := parseTokenLine(t, lines[0])
		value := lines[1]
		values = append(values, value)
		if raw, err := base64.RawURLEncoding.DecodeString(value); err != nil || len(raw) < 32 {
			t.Fatalf("the token %q is not 256 bits or more of URL-safe base64: %d bytes, %v", value, len(raw), err)
		}
		if bot.name != "chat-bot" || bot.role != "operator" || bot.revoked != "" ||
			bot.expiresAt.Before(before.Add(90*24*time.Hour).Truncate(time.Second)) || bot.expiresAt.After(time.Now().Add(90*24*time.Hour)) {
			t.Fatalf("create line %+v", bot)
		}
		if !strings.Contains(r.Stderr, "store the token now") {
			t.Fatalf("create does not tell to store the token now:\n%s", r.Stderr)
		}
		var stored, by, role string
		err := db.QueryRowContext(t.Context(), `SELECT TOKEN_SHA256, CREATED_BY, ROLE FROM CFG_API_TOKENS WHERE TOKEN_ID = $1`, bot.id).
			Scan(&stored, &by, &role)
		sum := sha256.Sum256([]byte(value))
		if err != nil || stored != hex.EncodeToString(sum[:]) || by != "alice@test" || role != "operator" {
			t.Fatalf("stored %q by %q as %q (%v); want the SHA-256 %x of the printed token", stored, by, role, err, sum)
		}
		if got, err := apitoken.Authenticate(t.Context(), db, value); err != nil || got.ID != bot.id {
			t.Fatalf("the printed token does not authenticate: %+v, %v", got, err)
		}

		r = run("token", "create", "--name", "dashboard", "--role", "viewer", "--format", "json")
		var doc tokenDocument
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || r.Code != 0 {
			t.Fatalf("create json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		if doc.Schema != "etl-craft/token/1" || doc.TokenID != bot.id+1 || doc.Name != "dashboard" || doc.Role != "viewer" ||
			doc.State != "ACTIVE" || doc.CreatedBy != "alice@test" || !strings.HasSuffix(doc.CreatedAt, "+00:00") ||
			doc.ExpiresAt != nil || doc.RevokedAt != nil || doc.Value == nil {
			t.Fatalf("create document %+v\n%s", doc, r.Stdout)
		}
		dashboard, dashboardID := *doc.Value, doc.TokenID
		values = append(values, dashboard)
		if dashboard == value || len(dashboard) < 43 {
			t.Fatalf("second token %q", dashboard)
		}

		// Refusals: usage errors (exit 2) reach no Engine DB; a name held
		// by a live token is refused there.
		for _, c := range []struct {
			args  []string
			words string
		}{
			{[]string{"token", "create", "--name", "x", "--role", "root"}, `--role: the token's role "root" is not a role: choose viewer, operator or admin`},
			{[]string{"token", "create", "--name", "x"}, "--role is required"},
			{[]string{"token", "create", "--role", "viewer"}, "--name is required"},
			{[]string{"token", "create", "--name", " ", "--role", "viewer"}, "--name: the token's name is blank"},
			{[]string{"token", "create", "--name", "x", "--role", "viewer", "--expires", "3w"}, `--expires: the token's lifetime "3w" is not a whole number of days or hours`},
			{[]string{"token", "create", "--name", "x", "--role", "viewer", "--expires", "0d"}, `"0d" is not above 0`},
			{[]string{"token", "create", "--name", "x", "--role", "viewer", "--expires", ""}, ""},
			{[]string{"token", "create", "--name", "x", "--role", "viewer", "--expires", "99999d"}, "longer than 36500 days"},
			{[]string{"token", "create", "--name", "x", "--role", "viewer", "--format", "yaml"}, "use text or json"},
			{[]string{"token", "revoke"}, "--token-id is required"},
			{[]string{"token", "revoke", "--token-id", "0"}, "--token-id must be a TOKEN_ID of 1 or more, got 0"},
			{[]string{"token", "revoke", "--token-id", "one"}, `invalid argument "one" for "--token-id"`},
			{[]string{"token", "list", "extra"}, "unknown command"},
			{[]string{"token"}, "no token command given: use create, list or revoke"},
			{[]string{"token", "crate"}, `unknown command "crate"; did you mean create?`},
		} {
			r := run(c.args...)
			if c.words == "" {
				// An empty --expires is the default: a token that never expires.
				if r.Code != 0 {
					t.Fatalf("%v: exit %d\n%s", c.args, r.Code, r.Stderr)
				}
				values = append(values, strings.Split(strings.TrimSpace(r.Stdout), "\n")[1])
				continue
			}
			e2e.WantExit(t, r, 2, c.words)
		}
		e2e.WantExit(t, run("token", "create", "--name", "chat-bot", "--role", "admin"), 2,
			`--name: the token's name "chat-bot" is taken by API token `+strconv.FormatInt(bot.id, 10)+", which is neither revoked nor expired")

		// list shows every token, never a value.
		r = run("token", "list")
		lines = strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
		if r.Code != 0 || len(lines) != 3 {
			t.Fatalf("list: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if l := parseTokenLine(t, lines[0]); l != bot {
			t.Fatalf("list line %+v, created %+v", l, bot)
		}
		if l := parseTokenLine(t, lines[1]); l.name != "dashboard" || l.role != "viewer" || l.expires != "" || l.revoked != "" {
			t.Fatalf("list line %+v", l)
		}
		r = run("token", "list", "--format", "json")
		var list struct {
			Schema string          `json:"schema"`
			Tokens []tokenDocument `json:"tokens"`
		}
		if err := jsonUnmarshal(r.Stdout, &list); err != nil || r.Code != 0 || list.Schema != "etl-craft/tokens/1" || len(list.Tokens) != 3 ||
			list.Tokens[0].Schema != "etl-craft/token/1" || list.Tokens[0].TokenID != bot.id || list.Tokens[0].State != "ACTIVE" ||
			list.Tokens[1].ExpiresAt != nil || strings.Contains(r.Stdout, `"value"`) {
			t.Fatalf("list json: exit %d, %v\n%s", r.Code, err, r.Stdout)
		}

		// An expired token is listed as such, no longer authenticates, and
		// its name is free again.
		err = db.Tx(actor.With(context.Background(), actor.Actor{Name: "test", Kind: actor.Human}), func(tx *engine.Tx) error {
			_, err := tx.ExecContext(t.Context(), `UPDATE CFG_API_TOKENS SET EXPIRES_AT = $1 WHERE TOKEN_ID = $2`,
				tx.TimeArg(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), bot.id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		r = run("token", "list", "--format", "json")
		list.Tokens = nil
		if err := jsonUnmarshal(r.Stdout, &list); err != nil || list.Tokens[0].State != "EXPIRED" ||
			*list.Tokens[0].ExpiresAt != "2026-01-02T03:04:05+00:00" {
			t.Fatalf("expired token: %v\n%s", err, r.Stdout)
		}
		if l := parseTokenLine(t, strings.Split(run("token", "list").Stdout, "\n")[0]); l.expires != "2026-01-02T03:04:05+00:00" {
			t.Fatalf("expired token line %+v", l)
		}
		if _, err := apitoken.Authenticate(t.Context(), db, value); !errors.Is(err, apitoken.ErrExpired) {
			t.Fatalf("an expired token authenticates: %v", err)
		}
		r = run("token", "create", "--name", "chat-bot", "--role", "operator", "--format", "json")
		doc = tokenDocument{}
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || r.Code != 0 || doc.Value == nil {
			t.Fatalf("a new token under an expired token's name: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		rotated := doc.TokenID
		values = append(values, *doc.Value)

		// revoke
		r = run("token", "revoke", "--token-id", strconv.FormatInt(rotated, 10))
		revoked := parseTokenLine(t, strings.TrimSuffix(r.Stdout, "\n"))
		if r.Code != 0 || revoked.id != rotated || revoked.name != "chat-bot" || revoked.revokedTime.Before(before.Truncate(time.Second)) {
			t.Fatalf("revoke: exit %d %+v\n%s%s", r.Code, revoked, r.Stdout, r.Stderr)
		}
		if _, err := apitoken.Authenticate(t.Context(), db, *doc.Value); !errors.Is(err, apitoken.ErrRevoked) {
			t.Fatalf("a revoked token authenticates: %v", err)
		}
		r = run("token", "revoke", "--token-id", strconv.FormatInt(dashboardID, 10), "--format", "json")
		doc = tokenDocument{}
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || r.Code != 0 || doc.Schema != "etl-craft/token/1" ||
			doc.Name != "dashboard" || doc.State != "REVOKED" || doc.RevokedAt == nil || doc.Value != nil {
			t.Fatalf("revoke json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		e2e.WantExit(t, run("token", "revoke", "--token-id", strconv.FormatInt(rotated, 10)), 2,
			"API token "+strconv.FormatInt(rotated, 10)+" (chat-bot) was already revoked at "+revoked.revoked+"; nothing to revoke")
		e2e.WantExit(t, run("token", "revoke", "--token-id", "999"), 24, "no API token has TOKEN_ID 999")
		if l := parseTokenLine(t, strings.Split(run("token", "list").Stdout, "\n")[3]); l != revoked {
			t.Fatalf("list after revoke %+v, revoke printed %+v", l, revoked)
		}

		// Each create and revoke that reached the Engine DB is one request,
		// refused or not; usage errors and list are none. No token value
		// reaches AUD_ACTIONS, nor any output but create's stdout.
		actions := textColumn(t, db, `SELECT COMMAND || ' ' || ACTOR || ' ' || CAST(ARGUMENTS AS VARCHAR) FROM AUD_ACTIONS
			WHERE COMMAND <> 'init-db' ORDER BY ACTION_ID`)
		want := []string{
			`token create alice@test {"expires":"90d","log-level":"DEBUG","name":"chat-bot","role":"operator"}`,
			`token create alice@test {"format":"json","name":"dashboard","role":"viewer"}`,
			`token create alice@test {"expires":"","name":"x","role":"viewer"}`,
			`token create alice@test {"name":"chat-bot","role":"admin"}`,
			`token create alice@test {"format":"json","name":"chat-bot","role":"operator"}`,
			`token revoke alice@test {"token-id":"[REDACTED]"}`,
			`token revoke alice@test {"format":"json","token-id":"[REDACTED]"}`,
			`token revoke alice@test {"token-id":"[REDACTED]"}`,
			`token revoke alice@test {"token-id":"[REDACTED]"}`,
		}
		for i, a := range actions {
			// The arguments as one canonical JSON text: PostgreSQL's JSONB
			// orders and spaces keys its own way.
			command, args, _ := strings.Cut(a, " {")
			var m map[string]any
			if err := jsonUnmarshal("{"+args, &m); err != nil {
				t.Fatalf("AUD_ACTIONS arguments %q: %v", args, err)
			}
			b, _ := json.Marshal(m)
			actions[i] = command + " " + string(b)
		}
		if strings.Join(actions, "\n") != strings.Join(want, "\n") {
			t.Fatalf("AUD_ACTIONS:\n%s\nwant:\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
		}
		everything := strings.Join(outputs, "\n") + strings.Join(textColumn(t, db, `SELECT CAST(ARGUMENTS AS VARCHAR) FROM AUD_ACTIONS`), "\n")
		for _, v := range values {
			if n := strings.Count(everything, v); n != 1 {
				t.Errorf("the token %s appears %d times in the outputs and AUD_ACTIONS; only its create prints it", v, n)
			}
		}
	})
}
