package configfiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Files are the six files' names, in the order they are applied.
func Files() []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.name
	}
	return out
}

// Set is the six files of a folder, read and checked.
type Set struct {
	// Dir is the folder they were read from.
	Dir string
	// Revision is the SHA-256, in hex, of the files' names and bytes.
	Revision string
	tables   []fileRows
}

// Short returns the first 12 hex digits of the revision.
func (s *Set) Short() string { return s.Revision[:12] }

// fileRows is one file's rows.
type fileRows struct {
	f    *file
	rows []fileRow
	// column is each CSV column's 1-based position in the file.
	column map[string]int
}

// fileRow is one data row: its line and its values by column, defaults
// applied.
type fileRow struct {
	line   int
	values map[string]string
}

// key returns the row's merge key as one string.
func (r fileRow) key(f *file) string {
	parts := make([]string, len(f.key))
	for i, c := range f.key {
		parts[i] = r.values[c]
	}
	return joinKey(parts)
}

// joinKey joins the parts of a merge key with a slash.
func joinKey(parts []string) string { return strings.Join(parts, "/") }

// problems collects what is wrong with the files, each as
// file:line:column: message.
type problems []string

// add records a problem; those that concern a whole file (line 0) are written file: message.
func (p *problems) add(name string, line, column int, format string, args ...any) {
	where := name
	if line > 0 {
		where = fmt.Sprintf("%s:%d:%d", name, line, column)
	}
	*p = append(*p, where+": "+fmt.Sprintf(format, args...))
}

// err returns the problems as one error with exit status 25, or nil.
func (p problems) err(dir string) error {
	if len(p) == 0 {
		return nil
	}
	return exit.Errorf(exit.ConfigFiles, "the config files in %s have %d problem(s):\n  %s", dir, len(p), strings.Join(p, "\n  "))
}

// Read reads and checks the six files of dir. Every problem found (a
// missing or unreadable file, a bad header, a malformed or duplicate row,
// a value of the wrong kind, a code no parent file holds) is listed with
// its file, line and column in one error with exit status 25.
func Read(dir string) (*Set, error) {
	s := &Set{Dir: dir}
	var probs problems
	h := sha256.New()
	for i := range files {
		f := &files[i]
		data, err := os.ReadFile(filepath.Join(dir, f.name))
		if errors.Is(err, fs.ErrNotExist) {
			probs.add(f.name, 0, 0, "missing: the folder must hold all six files (etl-craft config export writes them)")
			continue
		} else if err != nil {
			probs.add(f.name, 0, 0, "cannot be read: %v", err)
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(data))
		h.Write(data)
		s.tables = append(s.tables, parse(f, data, &probs))
	}
	if len(probs) == 0 {
		checkParents(s.tables, &probs)
	}
	if err := probs.err(dir); err != nil {
		return nil, err
	}
	s.Revision = hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// parse reads one file's CSV text.
func parse(f *file, data []byte, probs *problems) fileRows {
	out := fileRows{f: f, column: map[string]int{}}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		probs.add(f.name, 1, 1, "no header row: %v", csvMessage(err))
		return out
	}
	known := f.header()
	for i, c := range head {
		c = strings.ToUpper(strings.TrimSpace(c))
		switch {
		case !slices.Contains(known, c):
			probs.add(f.name, 1, i+1, "unknown column %q; the columns are %s", head[i], strings.Join(known, ", "))
		case out.column[c] != 0:
			probs.add(f.name, 1, i+1, "column %s appears twice", c)
		default:
			out.column[c] = i + 1
		}
	}
	for _, c := range f.key {
		if out.column[c] == 0 {
			probs.add(f.name, 1, 1, "the header has no %s column, which is part of the key (%s)", c, strings.Join(f.key, ", "))
		}
	}
	seen := map[string]int{}
	for {
		rec, err := r.Read()
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				probs.add(f.name, pe.Line, pe.Column, "%v", csvMessage(err))
				break
			}
			break // io.EOF
		}
		line, _ := r.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a blank line
		}
		if len(rec) != len(head) {
			probs.add(f.name, line, min(len(rec), len(head))+1, "the row has %d field(s); the header has %d", len(rec), len(head))
			continue
		}
		row := fileRow{line: line, values: map[string]string{}}
		for _, c := range known {
			v := ""
			if i := out.column[c]; i != 0 {
				v = rec[i-1]
			}
			if v == "" {
				v = f.defaults[c]
			}
			row.values[c] = v
		}
		bad := checkRow(f, row, out.column, probs)
		k := row.key(f)
		if first, dup := seen[k]; dup {
			probs.add(f.name, line, out.column[f.key[0]], "key %s is already on line %d", k, first)
			continue
		}
		seen[k] = line
		if !bad {
			out.rows = append(out.rows, row)
		}
	}
	return out
}

// csvMessage is the reader's message without its position, which the
// problem states already.
func csvMessage(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkRow checks a row's values by kind; it reports whether any was bad.
func checkRow(f *file, row fileRow, column map[string]int, probs *problems) bool {
	n := len(*probs)
	col := func(c string) int { return max(column[c], 1) }
	for _, c := range f.key {
		if row.values[c] == "" {
			probs.add(f.name, row.line, col(c), "%s is empty; it is part of the key", c)
		}
	}
	for c, v := range row.values {
		switch {
		case v == "":
		case flagColumns[c] && v != "Y" && v != "N":
			probs.add(f.name, row.line, col(c), "%s is %q; it must be Y or N", c, v)
		case integerColumns[c]:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				probs.add(f.name, row.line, col(c), "%s is %q; it must be a whole number", c, v)
			}
		case numericColumns[c]:
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				probs.add(f.name, row.line, col(c), "%s is %q; it must be a number", c, v)
			}
		case jsonColumns[c] && !json.Valid([]byte(v)):
			probs.add(f.name, row.line, col(c), "%s is not valid JSON", c)
		}
	}
	if row.values[colActive] == "Y" {
		for _, c := range f.required {
			if row.values[c] == "" {
				probs.add(f.name, row.line, col(c), "%s is empty; an active row needs it", c)
			}
		}
	}
	return len(*probs) > n
}

// checkParents reports rows whose pipeline or task codes no parent file
// holds: the files are the whole configuration.
func checkParents(tables []fileRows, probs *problems) {
	pipelines, tasks := map[string]bool{}, map[string]bool{}
	for _, t := range tables {
		for _, row := range t.rows {
			switch t.f.table {
			case "CFG_PIPELINES":
				pipelines[row.values[colPipeline]] = true
			case "CFG_TASKS":
				tasks[joinKey([]string{row.values[colPipeline], row.values[colTask]})] = true
			}
			for _, r := range t.f.refs {
				p := row.values[r.pipeline]
				switch {
				case r.task == "" && !pipelines[p]:
					probs.add(t.f.name, row.line, t.column[r.pipeline], "pipeline %s is not in pipelines.csv", p)
				case r.task != "" && !tasks[joinKey([]string{p, row.values[r.task]})]:
					probs.add(t.f.name, row.line, t.column[r.task], "task %s.%s is not in tasks.csv", p, row.values[r.task])
				}
			}
		}
	}
}
