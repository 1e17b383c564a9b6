package cli_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// docCommand is one command line of a fenced sh block of a document, as a
// user would type it: continuation lines joined, the comment removed.
type docCommand struct {
	where string // file:line
	text  string
}

// documentedCommands returns the command lines of the fenced ```sh blocks of
// README.md and then of docs/*.md, in the order they appear. (The ```console
// blocks are transcripts of made-up deployments, not commands to type.)
func documentedCommands(t *testing.T) []docCommand {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(docs)
	var out []docCommand
	for _, path := range append([]string{filepath.Join("..", "..", "README.md")}, docs...) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator)))
		sc := bufio.NewScanner(f)
		inSh, n, pending, start := false, 0, "", 0
		for sc.Scan() {
			n++
			line := sc.Text()
			switch fence := strings.TrimSpace(line); {
			case strings.HasPrefix(fence, "```") && !inSh:
				inSh = strings.TrimSpace(strings.TrimPrefix(fence, "```")) == "sh"
				continue
			case strings.HasPrefix(fence, "```"):
				inSh = false
				continue
			case !inSh:
				continue
			}
			if pending == "" {
				start = n
			}
			pending += line
			if strings.HasSuffix(pending, `\`) {
				pending = strings.TrimSuffix(pending, `\`) + " "
				continue
			}
			if text := strings.Join(shellWords(t, pending), " "); text != "" {
				out = append(out, docCommand{where: fmt.Sprintf("%s:%d", name, start), text: text})
			}
			pending = ""
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// shellWords splits a command line into words as sh would for the plain
// lines documents show: quotes group, a word starting with # starts a
// comment, and | stands as a word of its own.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
		case r == '#' && !inWord:
			return words
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// notRun are the lines of the documents' sh blocks that are not etl-craft
// commands, each with the reason this test does not run it. A new such line
// fails the test until it is run here or listed.
var notRun = map[string]string{
	"scripts/test.sh":                     "runs the whole test suite, this test among it",
	"chmod 700 /path/to/folder":           "a placeholder path: file-permission advice for a SQLite Engine DB, not an etl-craft command",
	"chmod 600 /path/to/folder/engine.db": "a placeholder path: file-permission advice for a SQLite Engine DB, not an etl-craft command",
}

// goRun is how README.md runs the program from the checkout, as the built
// binary is run here.
const goRun = "go run ./cmd/etl-craft "

// TestDocumentedCommandsWorkAsWritten runs every command of the fenced sh
// blocks of README.md and docs/*.md, in order, as a new user would after
// `go run ./cmd/etl-craft quickstart`: each must exit 0. On PostgreSQL the
// quickstart project's Engine section is pointed at a fresh PostgreSQL
// database right after the quickstart, as a user moving it to production
// would, so the commands after it (setup first) run there, and the grants
// piped into psql are executed in it.
func TestDocumentedCommandsWorkAsWritten(t *testing.T) {
	t.Parallel()
	commands := documentedCommands(t)
	if !slices.ContainsFunc(commands, func(c docCommand) bool {
		return c.text == "etl-craft history --pipeline_code QUICKSTART_SALES"
	}) {
		t.Fatalf("README.md's `etl-craft history --pipeline_code QUICKSTART_SALES` was not found among %v", commands)
	}
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		root := &e2e.Project{T: t, Dir: t.TempDir(), Pair: e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}}
		qs := &e2e.Project{T: t, Dir: filepath.Join(root.Dir, "etl-craft-quickstart"), Pair: e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}}
		for _, c := range commands {
			stages := strings.Split(c.text, " | ")
			first := stages[0]
			switch {
			case strings.HasPrefix(first, goRun):
				runDocumented(t, root, c, strings.Fields(strings.TrimPrefix(first, goRun)))
				if kind == engine.Postgres && qs.Engine.Kind != engine.Postgres && strings.HasPrefix(first, goRun+"quickstart") {
					moveEngineToPostgres(t, qs)
				}
			case strings.HasPrefix(first, "etl-craft "):
				if _, err := os.Stat(filepath.Join(qs.Dir, "craft-connector.yml")); err != nil {
					t.Fatalf("%s: %s runs in the quickstart project, which README.md's quickstart writes first: %v",
						c.where, c.text, err)
				}
				r := runDocumented(t, qs, c, strings.Fields(strings.TrimPrefix(first, "etl-craft ")))
				for _, stage := range stages[1:] {
					pipeInto(t, qs, c, stage, r.Stdout)
				}
			default:
				if _, ok := notRun[c.text]; !ok {
					t.Fatalf("%s: %q is no etl-craft command: run it in this test or list it in notRun with the reason",
						c.where, c.text)
				}
			}
		}
	})
}

// runDocumented runs one documented etl-craft command and fails the test
// unless it exits 0.
func runDocumented(t *testing.T, p *e2e.Project, c docCommand, args []string) e2e.Result {
	t.Helper()
	r := p.Run(nil, args...)
	if r.Code != 0 {
		t.Fatalf("%s: `%s` exited %d\nstdout:\n%s\nstderr:\n%s", c.where, c.text, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// pipeInto runs the program a documented command pipes its output into. psql
// runs in the PostgreSQL Engine DB's database; on SQLite, where
// --print-grants prints file-permission advice instead of SQL, there is no
// database to run it in.
func pipeInto(t *testing.T, p *e2e.Project, c docCommand, stage, input string) {
	t.Helper()
	words := strings.Fields(stage)
	if words[0] != "psql" {
		t.Fatalf("%s: `%s` pipes into %s: run it in this test", c.where, c.text, words[0])
	}
	if p.Pair.Engine != engine.Postgres {
		t.Logf("%s: not piped into psql: the Engine DB is SQLite", c.where)
		return
	}
	args := words[1:]
	for i, w := range args {
		if w == "<database>" {
			args[i] = p.Engine.DSN
		}
	}
	cmd := exec.Command(enginetest.Client(t, "psql"), args...)
	cmd.Stdin = strings.NewReader(input)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: `%s`: psql: %v\n%s", c.where, c.text, err, out)
	}
}

// moveEngineToPostgres replaces the Engine section of the quickstart
// project's craft-connector.yml with the one of a project on a fresh
// PostgreSQL database, and gives qs that database's secret and options.
func moveEngineToPostgres(t *testing.T, qs *e2e.Project) {
	t.Helper()
	pg := newProject(t, engine.Postgres, "")
	qs.Env, qs.Engine = pg.Env, pg.Engine
	section := func(path string) (text string, from, to int) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
		from, to = strings.Index(text, "\nEngine:\n"), strings.Index(text, "\nWarehouse:")
		if from < 0 || to < from {
			t.Fatalf("%s has no Engine section before its Warehouse section:\n%s", path, text)
		}
		return text, from, to
	}
	path := filepath.Join(qs.Dir, "craft-connector.yml")
	text, from, to := section(path)
	pgText, pgFrom, pgTo := section(filepath.Join(pg.Dir, "craft-connector.yml"))
	if err := os.WriteFile(path, []byte(text[:from]+pgText[pgFrom:pgTo]+text[to:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
