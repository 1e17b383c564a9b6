package cli

// Shared output and flag helpers of the commands.
//
// Results go to stdout in one of two forms, chosen by --format:
//
//   - text: tab-separated tables with a header row (newTable, printTable). A
//     missing value (nil) is an empty field; an empty result prints
//     "(<what>)", such as "(no active pipelines)", instead of the table.
//   - json: exactly one JSON document (printJSON), which carries its
//     "schema": "etl-craft/<name>/1" id. Timestamps are ISO 8601 in UTC with
//     an explicit offset (report.Instant). The documents and their schema ids
//     are package report's.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/freetext"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/run"
)

// Output formats of --format.
const (
	formatText = "text"
	formatJSON = "json"
)

// outputFormat is the value of a --format flag: text (the default) or json.
// Any other value is refused while the flags are parsed (exit 2).
type outputFormat string

// String returns the format's name.
func (f *outputFormat) String() string { return string(*f) }

// Set accepts text or json, in any case.
func (f *outputFormat) Set(s string) error {
	switch v := strings.ToLower(s); v {
	case formatText, formatJSON:
		*f = outputFormat(v)
		return nil
	}
	return fmt.Errorf("use text or json")
}

// Type names the flag's value in help.
func (f *outputFormat) Type() string { return "text|json" }

// json reports whether JSON output was asked for.
func (f *outputFormat) json() bool { return *f == formatJSON }

// addFormatFlag gives the command --format text|json (default text).
func addFormatFlag(cmd *cobra.Command) *outputFormat {
	f := outputFormat(formatText)
	cmd.Flags().Var(&f, "format", "output format: text or json")
	return &f
}

// printJSON writes one JSON document, indented, with a final newline. HTML
// characters are written as they are.
func (a *app) printJSON(doc any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// table is a result table: a header row and rows of fields.
type table struct {
	header []string
	rows   [][]string
}

// newTable starts a table with its header.
func newTable(header ...string) *table { return &table{header: header} }

// add appends a row; each value becomes a field (see field).
func (t *table) add(values ...any) {
	row := make([]string, len(values))
	for i, v := range values {
		row[i] = field(v)
	}
	t.rows = append(t.rows, row)
}

// printTable writes the table as tab-separated lines, header first, or
// "(<empty>)" when it has no rows.
func (a *app) printTable(t *table, empty string) {
	if len(t.rows) == 0 {
		a.printf("(%s)\n", empty)
		return
	}
	a.printf("%s\n", strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		a.printf("%s\n", strings.Join(r, "\t"))
	}
}

// field writes one value of a table or of a key=value line: nil (and a nil
// pointer) is empty, a pointer is its value, a float is written in its
// shortest form. Tabs and line breaks become spaces, so that every row
// stays one line of fields, and every other control character (such as a
// terminal escape in text stored before etl-craft refused them) is written
// as an escape (freetext.Visible).
func field(v any) string {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return ""
	}
	var s string
	switch x := rv.Interface().(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case json.RawMessage:
		s = string(x)
	case fmt.Stringer:
		s = x.String()
	default:
		s = fmt.Sprint(x)
	}
	return freetext.Visible(strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// pipelineFlag gives the command --pipeline_code; required reports a missing
// one as a usage error from check.
type pipelineFlag struct {
	code     string
	required bool
}

// addPipelineFlag gives the command --pipeline_code.
func addPipelineFlag(cmd *cobra.Command, required bool, help string) *pipelineFlag {
	p := &pipelineFlag{required: required}
	cmd.Flags().StringVar(&p.code, "pipeline_code", "", help)
	return p
}

// check refuses a missing required --pipeline_code (exit 2).
func (p *pipelineFlag) check() error {
	if p.required && strings.TrimSpace(p.code) == "" {
		return usagef("--pipeline_code is required")
	}
	return nil
}

// runFlags are the run selector, --run-id N or --run-key KEY.
type runFlags struct {
	cmd *cobra.Command
	id  int64
	key string
}

// addRunFlags gives the command the run selector flags.
func addRunFlags(cmd *cobra.Command) *runFlags {
	r := &runFlags{cmd: cmd}
	cmd.Flags().Int64Var(&r.id, "run-id", 0, "the run with this PIPELINE_RUN_ID (default: the pipeline's one run not yet ended)")
	cmd.Flags().StringVar(&r.key, "run-key", "", "the run with this RUN_KEY")
	return r
}

// selector returns the selected run; a bad combination is a usage error.
func (r *runFlags) selector() (inspect.RunSelector, error) {
	return inspect.NewRunSelector(r.cmd.Flags().Changed("run-id"), r.id, r.cmd.Flags().Changed("run-key"), r.key)
}

// printOperation prints what an operator command changed: its message, or
// with --format json its operation document.
func (a *app) printOperation(s *session, format *outputFormat, c run.Change) error {
	if !format.json() {
		a.printf("%s\n", exit.Flags(c.Message))
		return nil
	}
	doc, err := inspect.Operation(s.ctx, s.db, s.cfg.Orchestration.Location, time.Now(), c.PipelineID, c.PipelineCode, c.RunID, c.TaskCode, exit.Flags(c.Message))
	if err != nil {
		return err
	}
	return a.printJSON(doc)
}

// serverDetail returns the DETAIL and HINT lines PostgreSQL sent with the
// error err carries, as psql prints them, such as "DETAIL: Failing row
// contains (…)."; "" when err carries no PostgreSQL error or it has neither.
func serverDetail(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	var b strings.Builder
	for _, l := range []struct{ label, text string }{{"DETAIL", pe.Detail}, {"HINT", pe.Hint}} {
		if l.text != "" {
			fmt.Fprintf(&b, "%s: %s\n", l.label, l.text)
		}
	}
	return b.String()
}
