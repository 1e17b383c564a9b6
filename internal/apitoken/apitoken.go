// Package apitoken keeps the HTTP API's bearer credentials in CFG_API_TOKENS:
// it creates tokens (printed once, stored only as their SHA-256), lists and
// revokes them, and authenticates a presented token by its hash. The
// `etl-craft token` command and the API's token endpoints are built on it.
//
// A token's name is recorded as the actor of what it does, so it follows the
// rules of an actor's name, and no two live tokens (neither revoked nor
// expired) share one. Every time is UTC, taken from this process's clock and
// bound as a parameter, the same way on both Engine DB dialects.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
)

// ValueBytes is how many random bytes a token value holds: 256 bits.
const ValueBytes = 32

// MaxLifetimeDays is the longest lifetime a token can be given.
const MaxLifetimeDays = 36500

// TimeLayout is how messages and the text output write a token's times:
// to the second, in UTC with its offset, without a space.
const TimeLayout = "2006-01-02T15:04:05-07:00"

// NameLock is the lock under which a new token's name is checked and
// stored, so that two live tokens never share a name.
const NameLock = "api-token-names"

// State is where a token stands at a given time.
type State string

// The states of a token.
const (
	// Active tokens authenticate.
	Active State = "ACTIVE"
	// Expired tokens are past their EXPIRES_AT.
	Expired State = "EXPIRED"
	// Revoked tokens have a REVOKED_AT; revoking wins over expiring.
	Revoked State = "REVOKED"
)

// Token is one CFG_API_TOKENS row, without its hash.
type Token struct {
	ID        int64
	Name      string
	Role      Role
	CreatedBy string
	CreatedAt time.Time
	// ExpiresAt is when the token stops authenticating; nil: never.
	ExpiresAt *time.Time
	// RevokedAt is when the token was revoked; nil: it was not.
	RevokedAt *time.Time
}

// StateAt returns the token's state at now: a token expires at its
// EXPIRES_AT itself.
func (t Token) StateAt(now time.Time) State {
	switch {
	case t.RevokedAt != nil:
		return Revoked
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return Expired
	}
	return Active
}

// Created is a token just created, with the value that authenticates it.
// The value exists only here: it is never stored, logged or shown again.
type Created struct {
	Token
	Value string
}

// The refusals of Authenticate; each is wrapped with what identifies the
// token (never its value). The HTTP API answers all of them 401.
var (
	// ErrMissing: no token was presented.
	ErrMissing = errors.New("no API token was presented")
	// ErrUnknown: no token has the presented value's hash.
	ErrUnknown = errors.New("the API token is not known")
	// ErrExpired: the token is past its expiry.
	ErrExpired = errors.New("the API token has expired")
	// ErrRevoked: the token was revoked.
	ErrRevoked = errors.New("the API token was revoked")
)

// FieldError is a request refused for one of its fields; the error it
// wraps says why. Field is the request field's name (name, role, expires,
// token_id), for the HTTP API to name and the CLI to phrase as its flag.
type FieldError struct {
	Field string
	Err   error
}

// Error returns the reason.
func (e *FieldError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *FieldError) Unwrap() error { return e.Err }

// invalid returns a usage error (exit 2) refusing the field.
func invalid(field string, err error) error {
	return &exit.Error{Code: exit.Usage, Err: &FieldError{Field: field, Err: err}}
}

// Request asks for a new token.
type Request struct {
	Name string
	// Role is viewer, operator or admin (see ParseRole).
	Role string
	// Expires is the token's lifetime, a whole number of days or hours
	// such as 90d or 12h (in lower case, as the HTTP API's schema takes
	// it); empty: the token never expires.
	Expires string
}

// Validate refuses a request Create would refuse before reading the Engine
// DB, with a usage error (exit 2) wrapping a FieldError.
func (r Request) Validate() error {
	_, _, err := r.parse()
	return err
}

// lifetimePattern is the form of Request.Expires.
var lifetimePattern = regexp.MustCompile(`^([0-9]+)([dh])$`)

// parse returns the request's role and lifetime (0: no expiry).
func (r Request) parse() (Role, time.Duration, error) {
	if err := actor.CheckName(r.Name, "the token's name"); err != nil {
		return "", 0, invalid("name", err)
	}
	role, ok := ParseRole(r.Role)
	if !ok {
		return "", 0, invalid("role", fmt.Errorf("the token's role %q is not a role: choose %s", r.Role, roleList()))
	}
	if r.Expires == "" {
		return role, 0, nil
	}
	m := lifetimePattern.FindStringSubmatch(r.Expires)
	if m == nil {
		return "", 0, invalid("expires", fmt.Errorf(
			"the token's lifetime %q is not a whole number of days or hours, such as 90d or 12h", r.Expires))
	}
	unit := 24 * time.Hour
	if m[2] == "h" {
		unit = time.Hour
	}
	n, err := strconv.Atoi(m[1]) // only digits: an error is an overflow
	switch {
	case err != nil || time.Duration(n) > MaxLifetimeDays*24*time.Hour/unit:
		return "", 0, invalid("expires", fmt.Errorf(
			"the token's lifetime %q is longer than %d days: leave the expiry out for a token that never expires",
			r.Expires, MaxLifetimeDays))
	case n < 1:
		return "", 0, invalid("expires", fmt.Errorf("the token's lifetime %q is not above 0", r.Expires))
	}
	return role, time.Duration(n) * unit, nil
}

// now is the time every write stamps and every check compares with: UTC,
// to the microsecond both dialects keep.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Create makes a token for the request, as the context's actor, and returns
// it with its value: ValueBytes from crypto/rand, URL-safe base64 without
// padding. Only the value's SHA-256 is stored. A name held by a live token
// is refused (exit 2).
func Create(ctx context.Context, db *engine.DB, req Request) (Created, error) {
	role, lifetime, err := req.parse()
	if err != nil {
		return Created{}, err
	}
	raw := make([]byte, ValueBytes)
	if _, err := rand.Read(raw); err != nil {
		return Created{}, fmt.Errorf("could not draw a random token value: %w", err)
	}
	held, err := lock.Acquire(ctx, db, NameLock, 0)
	if err != nil {
		return Created{}, err
	}
	defer held.Release()
	at := now()
	c := Created{Token: Token{Name: req.Name, Role: role, CreatedBy: actor.From(ctx).Name, CreatedAt: at},
		Value: base64.RawURLEncoding.EncodeToString(raw)}
	var expires any
	if lifetime > 0 {
		e := at.Add(lifetime)
		c.ExpiresAt, expires = &e, db.TimeArg(e)
	}
	err = db.Tx(ctx, func(tx *engine.Tx) error {
		var holder int64
		err := tx.QueryRowContext(ctx, `SELECT COALESCE(MIN(TOKEN_ID), 0) FROM CFG_API_TOKENS
			WHERE NAME = $1 AND REVOKED_AT IS NULL AND (EXPIRES_AT IS NULL OR EXPIRES_AT > $2)`,
			req.Name, tx.TimeArg(at)).Scan(&holder)
		if err != nil {
			return readError(err)
		}
		if holder != 0 {
			return invalid("name", fmt.Errorf(
				"the token's name %q is taken by API token %d, which is neither revoked nor expired: choose another name, or revoke token %d first",
				req.Name, holder, holder))
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO CFG_API_TOKENS (NAME, TOKEN_SHA256, ROLE, CREATED_BY, CREATED_AT, EXPIRES_AT)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING TOKEN_ID`,
			req.Name, digest(c.Value), string(role), c.CreatedBy, tx.TimeArg(at), expires).Scan(&c.ID)
		return exit.Wrap(exit.EngineDB, err, "could not store the API token %q in CFG_API_TOKENS", req.Name)
	})
	if err != nil {
		return Created{}, err
	}
	return c, nil
}

// List returns every token, revoked and expired ones too, by TOKEN_ID.
func List(ctx context.Context, db *engine.DB) ([]Token, error) {
	rows, err := db.QueryContext(ctx, selectTokens+` ORDER BY TOKEN_ID`)
	if err != nil {
		return nil, readError(err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, readError(err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, readError(err)
	}
	return out, nil
}

// Find returns the token with the id, as it is now, whatever its state; an
// id no token has is exit 24.
func Find(ctx context.Context, db *engine.DB, id int64) (Token, error) {
	t, err := scanToken(db.QueryRowContext(ctx, selectTokens+` WHERE TOKEN_ID = $1`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Token{}, noToken(id)
	case err != nil:
		return Token{}, readError(err)
	}
	return t, nil
}

// noToken is the error of an id no token has (exit 24).
func noToken(id int64) error {
	return exit.Errorf(exit.ResourceNotFound, "no API token has TOKEN_ID %d", id)
}

// Revoke revokes the token with the id, as the context's actor, and returns
// it as it is afterwards. An id no token has is exit 24; a token already
// revoked is refused (exit 2), keeping its first REVOKED_AT. An expired
// token can be revoked.
func Revoke(ctx context.Context, db *engine.DB, id int64) (Token, error) {
	var t Token
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		var err error
		t, err = scanToken(tx.QueryRowContext(ctx, selectTokens+` WHERE TOKEN_ID = $1`, id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return noToken(id)
		case err != nil:
			return readError(err)
		case t.RevokedAt != nil:
			return alreadyRevoked(t)
		}
		at := now()
		res, err := tx.ExecContext(ctx, `UPDATE CFG_API_TOKENS SET REVOKED_AT = $1 WHERE TOKEN_ID = $2 AND REVOKED_AT IS NULL`,
			tx.TimeArg(at), id)
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not revoke API token %d in CFG_API_TOKENS", id)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not revoke API token %d in CFG_API_TOKENS", id)
		}
		if n == 0 {
			// Another process revoked it since it was read.
			if t, err = scanToken(tx.QueryRowContext(ctx, selectTokens+` WHERE TOKEN_ID = $1`, id)); err != nil {
				return readError(err)
			}
			return alreadyRevoked(t)
		}
		t.RevokedAt = &at
		return nil
	})
	if err != nil {
		return Token{}, err
	}
	return t, nil
}

// alreadyRevoked refuses revoking a revoked token.
func alreadyRevoked(t Token) error {
	return invalid("token_id", fmt.Errorf("API token %d (%s) was already revoked at %s; nothing to revoke",
		t.ID, t.Name, t.RevokedAt.Format(TimeLayout)))
}

// Authenticate returns the token whose value was presented. It looks the
// token up by the SHA-256 of the value, never comparing values, so the time
// it takes tells nothing about a stored value. It refuses a blank value
// (ErrMissing), an unknown one (ErrUnknown), and a revoked (ErrRevoked) or
// expired (ErrExpired) token, which it returns along with the error. A
// failed read is an EngineDB error (exit 12).
func Authenticate(ctx context.Context, db *engine.DB, presented string) (Token, error) {
	if strings.TrimSpace(presented) == "" {
		return Token{}, ErrMissing
	}
	t, err := scanToken(db.QueryRowContext(ctx, selectTokens+` WHERE TOKEN_SHA256 = $1`, digest(presented)))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Token{}, ErrUnknown
	case err != nil:
		return Token{}, readError(err)
	}
	switch t.StateAt(now()) {
	case Revoked:
		return t, fmt.Errorf("%w: token %d (%s) at %s", ErrRevoked, t.ID, t.Name, t.RevokedAt.Format(TimeLayout))
	case Expired:
		return t, fmt.Errorf("%w: token %d (%s) at %s", ErrExpired, t.ID, t.Name, t.ExpiresAt.Format(TimeLayout))
	}
	return t, nil
}

// digest is the lower-case hex SHA-256 of a token value, as TOKEN_SHA256
// stores it.
func digest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// selectTokens reads the columns scanToken scans.
const selectTokens = `SELECT TOKEN_ID, NAME, ROLE, CREATED_BY, CREATED_AT, EXPIRES_AT, REVOKED_AT FROM CFG_API_TOKENS`

// scanToken scans one row of selectTokens.
func scanToken(row interface{ Scan(...any) error }) (Token, error) {
	var t Token
	var role string
	var created, expires, revoked engine.Time
	if err := row.Scan(&t.ID, &t.Name, &role, &t.CreatedBy, &created, &expires, &revoked); err != nil {
		return Token{}, err
	}
	t.Role, t.CreatedAt = Role(role), created.Time
	t.ExpiresAt, t.RevokedAt = optional(expires), optional(revoked)
	return t, nil
}

// optional returns a scanned nullable time; nil for NULL.
func optional(t engine.Time) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// readError wraps a failed read of CFG_API_TOKENS (exit 12).
func readError(err error) error {
	return exit.Wrap(exit.EngineDB, err, "could not read CFG_API_TOKENS")
}
