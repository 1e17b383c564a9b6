package apitoken_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// alice is the actor the tests create and revoke tokens as.
func alice() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "alice@test", Kind: actor.Human})
}

// create makes a token and fails the test on error.
func create(t *testing.T, db *engine.DB, req apitoken.Request) apitoken.Created {
	t.Helper()
	c, err := apitoken.Create(alice(), db, req)
	if err != nil {
		t.Fatalf("create %+v: %v", req, err)
	}
	return c
}

// setTime sets one time column of a token, as an engine write would.
func setTime(t *testing.T, db *engine.DB, column string, id int64, at time.Time) {
	t.Helper()
	err := db.Tx(alice(), func(tx *engine.Tx) error {
		_, err := tx.ExecContext(context.Background(), `UPDATE CFG_API_TOKENS SET `+column+` = $1 WHERE TOKEN_ID = $2`, tx.TimeArg(at), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoleOrder(t *testing.T) {
	for _, c := range []struct {
		have, need apitoken.Role
		ok         bool
	}{
		{apitoken.Viewer, apitoken.Viewer, true}, {apitoken.Viewer, apitoken.Operator, false}, {apitoken.Viewer, apitoken.Admin, false},
		{apitoken.Operator, apitoken.Viewer, true}, {apitoken.Operator, apitoken.Operator, true}, {apitoken.Operator, apitoken.Admin, false},
		{apitoken.Admin, apitoken.Viewer, true}, {apitoken.Admin, apitoken.Operator, true}, {apitoken.Admin, apitoken.Admin, true},
		{"root", apitoken.Viewer, false}, {apitoken.Admin, "root", false}, {"", "", false},
	} {
		if got := c.have.Allows(c.need); got != c.ok {
			t.Errorf("%q.Allows(%q) = %v, want %v", c.have, c.need, got, c.ok)
		}
	}
	for in, want := range map[string]apitoken.Role{"viewer": apitoken.Viewer, "operator": apitoken.Operator, "admin": apitoken.Admin} {
		if r, ok := apitoken.ParseRole(in); !ok || r != want {
			t.Errorf("ParseRole(%q) = %q, %v", in, r, ok)
		}
	}
	// One rule for the command line and the HTTP API: the roles as they
	// are stored, in lower case.
	for _, in := range []string{"superuser", "ADMIN", "Operator", " viewer", ""} {
		if _, ok := apitoken.ParseRole(in); ok {
			t.Errorf("%q parsed as a role", in)
		}
	}
}

func TestValidateRefusesBadRequestsNamingTheField(t *testing.T) {
	for _, c := range []struct {
		req          apitoken.Request
		field, words string
	}{
		{apitoken.Request{Name: " ", Role: "viewer"}, "name", "the token's name is blank"},
		{apitoken.Request{Name: strings.Repeat("n", 129), Role: "viewer"}, "name", "longer than 128 characters"},
		{apitoken.Request{Name: "bot\nx", Role: "viewer"}, "name", "control or format character"},
		{apitoken.Request{Name: "bot", Role: "root"}, "role", `the token's role "root" is not a role: choose viewer, operator or admin`},
		{apitoken.Request{Name: "bot", Role: ""}, "role", `role "" is not a role`},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "90"}, "expires", `"90" is not a whole number of days or hours, such as 90d or 12h`},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "3w"}, "expires", "not a whole number of days or hours"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "-1d"}, "expires", "not a whole number"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "1.5d"}, "expires", "not a whole number"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "0d"}, "expires", `"0d" is not above 0`},
		{apitoken.Request{Name: "bot", Role: "ADMIN"}, "role", "not a role"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "12H"}, "expires", "not a whole number"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "36501d"}, "expires", "longer than 36500 days"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "876001h"}, "expires", "longer than 36500 days"},
		{apitoken.Request{Name: "bot", Role: "viewer", Expires: "99999999999999999999d"}, "expires", "longer than 36500 days"},
	} {
		err := c.req.Validate()
		var fe *apitoken.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || exit.CodeOf(err) != exit.Usage || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%+v: %v (code %d), want field %s saying %q", c.req, err, exit.CodeOf(err), c.field, c.words)
		}
	}
	for _, ok := range []apitoken.Request{
		{Name: "chat bot", Role: "viewer"}, {Name: "x", Role: "admin", Expires: "90d"},
		{Name: "x", Role: "operator", Expires: "12h"}, {Name: "x", Role: "viewer", Expires: "36500d"},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// Create stores the hash of a long random value and nothing else of it;
// Authenticate finds the token by that value alone.
func TestCreateStoresOnlyTheHashAndAuthenticates(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		before := time.Now().UTC().Add(-time.Second)
		c := create(t, db, apitoken.Request{Name: "chat bot", Role: "operator", Expires: "90d"})
		raw, err := base64.RawURLEncoding.DecodeString(c.Value)
		if err != nil || len(raw) < 32 || len(c.Value) < 43 {
			t.Fatalf("value %q: %d bytes, %v", c.Value, len(raw), err)
		}
		if c.ID < 1 || c.Name != "chat bot" || c.Role != apitoken.Operator || c.CreatedBy != "alice@test" ||
			c.CreatedAt.Before(before) || c.ExpiresAt == nil || c.ExpiresAt.Sub(c.CreatedAt) != 90*24*time.Hour || c.RevokedAt != nil {
			t.Fatalf("created %+v", c.Token)
		}
		var stored, role, by string
		var project *int64
		err = db.QueryRowContext(context.Background(), `SELECT TOKEN_SHA256, ROLE, PROJECT_ID, CREATED_BY FROM CFG_API_TOKENS WHERE TOKEN_ID = $1`, c.ID).
			Scan(&stored, &role, &project, &by)
		sum := sha256.Sum256([]byte(c.Value))
		if err != nil || stored != hex.EncodeToString(sum[:]) || role != "operator" || project != nil || by != "alice@test" {
			t.Fatalf("stored %q %q %v %q, %v; want the hash %x", stored, role, project, by, err, sum)
		}

		got, err := apitoken.Authenticate(context.Background(), db, c.Value)
		if err != nil || got.ID != c.ID || got.Name != "chat bot" || got.Role != apitoken.Operator ||
			!got.CreatedAt.Equal(c.CreatedAt) || !got.ExpiresAt.Equal(*c.ExpiresAt) || got.RevokedAt != nil {
			t.Fatalf("authenticate: %+v, %v; created %+v", got, err, c.Token)
		}
		for _, wrong := range []string{c.Value[:len(c.Value)-1], c.Value + "x", strings.ToUpper(c.Value), stored} {
			if _, err := apitoken.Authenticate(context.Background(), db, wrong); !errors.Is(err, apitoken.ErrUnknown) {
				t.Errorf("authenticate %q: %v, want ErrUnknown", wrong, err)
			}
		}
		for _, blank := range []string{"", "  "} {
			if _, err := apitoken.Authenticate(context.Background(), db, blank); !errors.Is(err, apitoken.ErrMissing) {
				t.Errorf("authenticate %q: %v, want ErrMissing", blank, err)
			}
		}

		other := create(t, db, apitoken.Request{Name: "dashboard", Role: "viewer"})
		if other.Value == c.Value || other.ExpiresAt != nil {
			t.Fatalf("second token %+v", other)
		}
		list, err := apitoken.List(context.Background(), db)
		if err != nil || len(list) != 2 || list[0].ID != c.ID || list[1].ID != other.ID || list[1].ExpiresAt != nil {
			t.Fatalf("list: %+v, %v", list, err)
		}
	})
}

// Expired and revoked tokens are refused with their own errors, and are
// returned with them; revoking wins over expiring.
func TestAuthenticateRefusesExpiredAndRevokedTokens(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		c := create(t, db, apitoken.Request{Name: "bot", Role: "admin", Expires: "1h"})
		past := time.Now().UTC().Add(-time.Minute)
		setTime(t, db, "EXPIRES_AT", c.ID, past)
		got, err := apitoken.Authenticate(ctx, db, c.Value)
		if !errors.Is(err, apitoken.ErrExpired) || errors.Is(err, apitoken.ErrRevoked) || got.ID != c.ID ||
			!strings.Contains(err.Error(), "token "+itoa(c.ID)+" (bot)") || strings.Contains(err.Error(), c.Value) {
			t.Fatalf("expired: %+v, %v", got, err)
		}
		if s := got.StateAt(time.Now()); s != apitoken.Expired {
			t.Fatalf("state %s", s)
		}
		// A token expires at its EXPIRES_AT itself.
		if s := got.StateAt(*got.ExpiresAt); s != apitoken.Expired {
			t.Fatalf("state at the expiry: %s", s)
		}
		if s := got.StateAt(got.ExpiresAt.Add(-time.Microsecond)); s != apitoken.Active {
			t.Fatalf("state before the expiry: %s", s)
		}

		// An expired token's name is free again, and it can still be revoked.
		again := create(t, db, apitoken.Request{Name: "bot", Role: "viewer"})
		revoked, err := apitoken.Revoke(alice(), db, c.ID)
		if err != nil || revoked.RevokedAt == nil || revoked.StateAt(time.Now()) != apitoken.Revoked {
			t.Fatalf("revoke expired: %+v, %v", revoked, err)
		}
		if _, err := apitoken.Authenticate(ctx, db, c.Value); !errors.Is(err, apitoken.ErrRevoked) {
			t.Fatalf("revoked and expired: %v", err)
		}

		// A live token revoked stops authenticating at once.
		if _, err := apitoken.Authenticate(ctx, db, again.Value); err != nil {
			t.Fatal(err)
		}
		r, err := apitoken.Revoke(alice(), db, again.ID)
		if err != nil || r.ID != again.ID || r.RevokedAt == nil {
			t.Fatalf("revoke: %+v, %v", r, err)
		}
		got, err = apitoken.Authenticate(ctx, db, again.Value)
		if !errors.Is(err, apitoken.ErrRevoked) || errors.Is(err, apitoken.ErrExpired) || got.ID != again.ID {
			t.Fatalf("revoked: %+v, %v", got, err)
		}
		list, err := apitoken.List(ctx, db)
		if err != nil || len(list) != 2 || !list[1].RevokedAt.Equal(*r.RevokedAt) {
			t.Fatalf("list: %+v, %v", list, err)
		}
	})
}

func TestRevokeRefusals(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		c := create(t, db, apitoken.Request{Name: "bot", Role: "viewer"})
		first, err := apitoken.Revoke(alice(), db, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = apitoken.Revoke(alice(), db, c.ID)
		if exit.CodeOf(err) != exit.Usage || !strings.Contains(err.Error(), "API token "+itoa(c.ID)+" (bot) was already revoked at ") {
			t.Fatalf("second revoke: %v", err)
		}
		list, _ := apitoken.List(context.Background(), db)
		if !list[0].RevokedAt.Equal(*first.RevokedAt) {
			t.Fatalf("the second revoke moved REVOKED_AT: %v, first %v", list[0].RevokedAt, first.RevokedAt)
		}
		if _, err := apitoken.Revoke(alice(), db, 999); exit.CodeOf(err) != exit.ResourceNotFound ||
			!strings.Contains(err.Error(), "no API token has TOKEN_ID 999") {
			t.Fatalf("unknown id: %v", err)
		}
		var fe *apitoken.FieldError
		if _, err := apitoken.Revoke(alice(), db, c.ID); !errors.As(err, &fe) || fe.Field != "token_id" {
			t.Fatalf("second revoke: %v, want a refusal of the token_id field", err)
		}
	})
}

// Two live tokens never share a name, even when created at the same time.
func TestLiveNamesAreUnique(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		c := create(t, db, apitoken.Request{Name: "bot", Role: "viewer"})
		_, err := apitoken.Create(alice(), db, apitoken.Request{Name: "bot", Role: "admin"})
		var fe *apitoken.FieldError
		if exit.CodeOf(err) != exit.Usage || !errors.As(err, &fe) || fe.Field != "name" ||
			!strings.Contains(err.Error(), `the token's name "bot" is taken by API token `+itoa(c.ID)) {
			t.Fatalf("duplicate: %v", err)
		}
		create(t, db, apitoken.Request{Name: "Bot", Role: "viewer"}) // names are case-sensitive, as actors are
		if _, err := apitoken.Revoke(alice(), db, c.ID); err != nil {
			t.Fatal(err)
		}
		create(t, db, apitoken.Request{Name: "bot", Role: "admin"})

		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = apitoken.Create(alice(), db, apitoken.Request{Name: "racer", Role: "viewer"})
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !strings.Contains(err.Error(), `"racer" is taken`):
				t.Errorf("a racing create: %v", err)
			}
		}
		var live int
		if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM CFG_API_TOKENS WHERE NAME = 'racer'`).Scan(&live); err != nil || won != 1 || live != 1 {
			t.Fatalf("%d creates won, %d rows stored (%v)", won, live, err)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
