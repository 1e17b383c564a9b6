package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/lock"
)

// TestTheLockWaitIsLoggedInTheChosenFormat holds the MIGRATE lock while
// `migrate --log-format json` starts: its line saying that it waits is a
// JSON record like every other line on stderr, and migrate goes on once the
// lock is released.
func TestTheLockWaitIsLoggedInTheChosenFormat(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		held, err := lock.Acquire(context.Background(), p.DB(), lock.Migrate, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()

		cmd := p.Command(nil, "--log-format", "json", "--log-level", "DEBUG", "migrate")
		var stdout bytes.Buffer
		stderr := &e2e.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = &stdout, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(stderr.String(), "waiting for a lock") {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("migrate never said it waits for the lock:\n%s", stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := held.Release(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil || stdout.String() != "migrate: already up to date\n" {
			t.Fatalf("migrate: %v %q\n%s", err, stdout.String(), stderr)
		}
		waits := 0
		for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("a stderr line is not JSON: %q", line)
			}
			if rec["msg"] == "waiting for a lock held by another etl-craft command" {
				waits++
				if rec["level"] != "INFO" || rec["lock"] != lock.Migrate {
					t.Errorf("the wait's record: %v", rec)
				}
			}
		}
		if waits != 1 {
			t.Fatalf("%d wait records:\n%s", waits, stderr)
		}
	})
}

// TestCommandLineMistakesAreUsageErrors: an unknown command, an unknown flag,
// a flag without its value and too many arguments exit 2, with the usage
// line of the command and, for a near miss, the name meant.
func TestCommandLineMistakesAreUsageErrors(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"histroy"}, "error: unknown command \"histroy\"; did you mean history?\n" +
			"usage: etl-craft <command> [flags] (see etl-craft --help)\n"},
		{[]string{"frobnicate", "now"}, "error: unknown command \"frobnicate\"\n" +
			"usage: etl-craft <command> [flags] (see etl-craft --help)\n"},
		{[]string{}, "error: no command given\nusage: etl-craft <command> [flags] (see etl-craft --help)\n"},
		{[]string{"run", "--pipeline-code", "P"}, "error: unknown flag: --pipeline-code; did you mean --pipeline_code?\n" +
			"usage: etl-craft run [flags] (see etl-craft run --help)\n"},
		{[]string{"list", "--log-formt", "json"}, "error: unknown flag: --log-formt; did you mean --log-format?\n" +
			"usage: etl-craft list [flags] (see etl-craft list --help)\n"},
		{[]string{"--bogus"}, "error: unknown flag: --bogus\nusage: etl-craft <command> [flags] (see etl-craft --help)\n"},
		{[]string{"status", "--pipeline_code"}, "error: flag needs an argument: --pipeline_code\n" +
			"usage: etl-craft status [flags] (see etl-craft status --help)\n"},
		{[]string{"list", "extra"}, "error: unknown command \"extra\" for \"etl-craft list\"\n" +
			"usage: etl-craft list [flags] (see etl-craft list --help)\n"},
		{[]string{"quickstart", "a", "b"}, "error: accepts at most 1 arg(s), received 2\n" +
			"usage: etl-craft quickstart [DIR] [flags] (see etl-craft quickstart --help)\n"},
		{[]string{"graph"}, "error: --pipeline_code is required\n" +
			"usage: etl-craft graph [flags] (see etl-craft graph --help)\n"},
	}
	for _, c := range cases {
		r := p.Run(nil, c.args...)
		if r.Code != 2 || r.Stderr != c.want || r.Stdout != "" {
			t.Errorf("etl-craft %s: exit %d\nstdout %q\nstderr %q\nwant   %q", strings.Join(c.args, " "), r.Code, r.Stdout, r.Stderr, c.want)
		}
	}
}

// TestPostgresErrorsShowTheServersDetailAndHint: a migration statement that
// PostgreSQL refuses prints the server's DETAIL (the failing row) and HINT
// lines after the error, as psql does.
func TestPostgresErrorsShowTheServersDetailAndHint(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.Postgres, "")
	p.OK("init-db")
	p.Write("migrations/0001_codes.sql", "CREATE TABLE codes_in_use (id VARCHAR NOT NULL, code VARCHAR);\n"+
		"INSERT INTO codes_in_use (code) VALUES ('SALES_DAILY.load_order');\n")
	r := p.Run(nil, "migrate")
	if r.Code != 13 || !strings.Contains(r.Stderr, `null value in column "id" of relation "codes_in_use" violates not-null constraint (SQLSTATE 23502)`+"\n"+
		"DETAIL: Failing row contains (null, SALES_DAILY.load_order).\n") {
		t.Fatalf("migrate: exit %d\n%s", r.Code, r.Stderr)
	}
	p.Write("migrations/0001_codes.sql", "SELECT no_such_function(1);\n")
	r = p.Run(nil, "migrate")
	if r.Code != 13 || !strings.Contains(r.Stderr, "(SQLSTATE 42883)\nHINT: No function matches the given name and argument types.") {
		t.Fatalf("migrate: exit %d\n%s", r.Code, r.Stderr)
	}
}
