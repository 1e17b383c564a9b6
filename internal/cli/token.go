package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/inspect"
)

// tokenLine is a token's line of text output:
// `<id> <name> <role> expires=<ts> revoked=<ts>`, a missing time empty.
func tokenLine(t apitoken.Token) string {
	ts := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(apitoken.TimeLayout)
	}
	return fmt.Sprintf("%d %s %s expires=%s revoked=%s", t.ID, field(t.Name), t.Role, ts(t.ExpiresAt), ts(t.RevokedAt))
}

// tokenUsage phrases a refused field of a token request as a usage error
// naming its flag, such as --expires; other errors are returned as they are.
func tokenUsage(err error) error {
	var fe *apitoken.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return usagef("--%s: %v", strings.ReplaceAll(fe.Field, "_", "-"), fe.Err)
}

// openTokenChange opens the Engine DB for a token command that changes it,
// checks that it holds etl-craft's tables and records the command's
// request. The caller closes s.db.
func (a *app) openTokenChange(cmd *cobra.Command) (*session, error) {
	s, err := a.openSession(cmd)
	if err != nil {
		return nil, err
	}
	if err := inspect.Ready(s.ctx, s.db); err != nil {
		s.db.Close()
		return nil, err
	}
	if err := a.record(s.ctx, s.db, cmd, "", ""); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func (a *app) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the HTTP API's bearer tokens",
		Long: "token manages the bearer tokens of the HTTP API that etl-craft server serves, kept in\n" +
			"CFG_API_TOKENS. create prints a new token's value once: only its SHA-256 is stored, so it\n" +
			"cannot be shown again. A token's role (viewer, operator or admin) says what it may do, and\n" +
			"its name is recorded as the actor of what it does. list shows every token, revoked and\n" +
			"expired ones too, never a value; revoke stops one at once.",
		Args: unknownCommand,
		RunE: func(*cobra.Command, []string) error {
			return usagef("no token command given: use create, list or revoke")
		},
	}
	cmd.AddCommand(a.tokenCreateCommand(), a.tokenListCommand(), a.tokenRevokeCommand())
	return cmd
}

func (a *app) tokenCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an API token and print its value, once",
		Long: "create --name N --role viewer|operator|admin [--expires 90d] stores a new API token and prints\n" +
			"its line (as list does) and then the token's value, on a line of its own. Keep the value\n" +
			"now: etl-craft stores only its SHA-256 and never shows it again. --expires gives the token a\n" +
			"lifetime in whole days or hours (90d, 12h); without it the token never expires. No two\n" +
			"tokens neither revoked nor expired share a name.",
		Args: cobra.NoArgs,
	}
	var req apitoken.Request
	cmd.Flags().StringVar(&req.Name, "name", "", "the token's name, recorded as the actor of what it does (required)")
	cmd.Flags().StringVar(&req.Role, "role", "", "viewer, operator or admin (required)")
	cmd.Flags().StringVar(&req.Expires, "expires", "", "lifetime in whole days or hours, such as 90d or 12h (default: never expires)")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		for _, f := range []string{"name", "role"} {
			if !cmd.Flags().Changed(f) {
				return usagef("--%s is required", f)
			}
		}
		if err := req.Validate(); err != nil {
			return tokenUsage(err)
		}
		s, err := a.openTokenChange(cmd)
		if err != nil {
			return err
		}
		defer s.db.Close()
		c, err := apitoken.Create(s.ctx, s.db, req)
		if err != nil {
			return tokenUsage(err)
		}
		a.logger().Info("store the token now: etl-craft keeps only its SHA-256 and cannot show it again",
			"token_id", c.ID, "name", c.Name)
		if format.json() {
			doc := c.Document(time.Now())
			doc.Value = c.Value
			return a.printJSON(doc)
		}
		a.printf("%s\n%s\n", tokenLine(c.Token), c.Value)
		return nil
	}
	return cmd
}

func (a *app) tokenListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the API tokens, never their values",
		Long: "list prints one line per API token, by id: `<id> <name> <role> expires=<ts> revoked=<ts>`,\n" +
			"a time left empty when there is none. Revoked and expired tokens are listed too. It only\n" +
			"reads the Engine DB.",
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_, db, err := a.openForReading(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		tokens, err := apitoken.List(cmd.Context(), db)
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(apitoken.Documents(tokens, time.Now()))
		}
		if len(tokens) == 0 {
			a.printf("(no API tokens)\n")
		}
		for _, t := range tokens {
			a.printf("%s\n", tokenLine(t))
		}
		return nil
	}
	return cmd
}

func (a *app) tokenRevokeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke an API token",
		Long: "revoke --token-id N stops the token with that TOKEN_ID from authenticating, at once, and\n" +
			"prints its line. The token stays listed, with the time it was revoked. Revoking a token\n" +
			"already revoked is refused.",
		Args: cobra.NoArgs,
	}
	var id int64
	cmd.Flags().Int64Var(&id, "token-id", 0, "the TOKEN_ID of the token to revoke, as list shows it (required)")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("token-id") {
			return usagef("--token-id is required")
		}
		if id < 1 {
			return usagef("--token-id must be a TOKEN_ID of 1 or more, got %d", id)
		}
		s, err := a.openTokenChange(cmd)
		if err != nil {
			return err
		}
		defer s.db.Close()
		t, err := apitoken.Revoke(s.ctx, s.db, id)
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(t.Document(time.Now()))
		}
		a.printf("%s\n", tokenLine(t))
		return nil
	}
	return cmd
}
