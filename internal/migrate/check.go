package migrate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// checkPending refuses, before anything is applied, the pending PROJECT
// files that could not keep the promise that each file applies whole, in
// its place, exactly once (exit 13): a file that sorts before an applied
// one or shares its number with another file, unless outOfOrder allows it;
// a file with no statement; and a statement that controls the transaction
// the file runs in or cannot run inside one.
func checkPending(kind engine.Kind, ledger []ledgerRow, streams []Stream, outOfOrder bool) error {
	var project Stream
	for _, s := range streams {
		if s.Source == Project {
			project = s
		}
	}
	applied := map[string]bool{}
	last := ""
	for _, r := range ledger {
		if r.Source == Project {
			applied[r.Version] = true
			last = max(last, r.Version)
		}
	}
	var todo []File
	for _, f := range project.Files {
		if !applied[f.Name] {
			todo = append(todo, f)
		}
	}
	if !outOfOrder {
		if err := checkOrder(project.Files, todo, applied, last); err != nil {
			return err
		}
	}
	for _, f := range todo {
		if err := checkStatements(kind, f); err != nil {
			return err
		}
	}
	return nil
}

// leadingNumber is the number a file name starts with, as in 0004_x.sql.
var leadingNumber = regexp.MustCompile(`^([0-9]+)_`)

// fileNumber returns the number a migration's name starts with; ok is false
// for a name without one.
func fileNumber(name string) (n uint64, ok bool) {
	m := leadingNumber.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	return n, err == nil
}

// checkOrder refuses a pending file whose number another file has too, and
// a pending file that sorts before the last applied file.
func checkOrder(files, todo []File, applied map[string]bool, last string) error {
	byNumber := map[uint64]string{}
	for _, f := range files {
		n, ok := fileNumber(f.Name)
		if !ok {
			continue
		}
		other, dup := byNumber[n]
		if !dup {
			byNumber[n] = f.Name
			continue
		}
		if applied[other] && applied[f.Name] {
			continue // both applied long ago: nothing left to decide
		}
		return exit.Fieldf(exit.Migration,
			"%s and %s share the number %s, so their order is a matter of spelling; "+
				"renumber the one not applied yet (such as %s), or apply it anyway with migrate {out_of_order}; nothing was applied",
			Project.label(other), f.Label(), leadingNumber.FindStringSubmatch(f.Name)[1], nextName(files, pendingOf(applied, other, f.Name)))
	}
	for _, f := range todo {
		if f.Name < last {
			return exit.Fieldf(exit.Migration,
				"%s sorts before %s, which is already applied: files apply in name order, so it would run out of order; "+
					"give it a name after %s (such as %s), or apply it anyway with migrate {out_of_order}; nothing was applied",
				f.Label(), Project.label(last), last, nextName(files, f.Name))
		}
	}
	return nil
}

// pendingOf returns whichever of the two names is not applied.
func pendingOf(applied map[string]bool, a, b string) string {
	if applied[b] {
		return a
	}
	return b
}

// nextName suggests a name for a file that must come after every file of
// the folder: the next number after the highest, with the file's own
// description.
func nextName(files []File, name string) string {
	var top uint64
	width := 4
	for _, f := range files {
		if n, ok := fileNumber(f.Name); ok {
			top = max(top, n)
			width = max(width, len(leadingNumber.FindStringSubmatch(f.Name)[1]))
		}
	}
	desc := name
	if m := leadingNumber.FindString(name); m != "" {
		desc = strings.TrimPrefix(name, m)
	}
	return fmt.Sprintf("%0*d_%s", width, top+1, desc)
}

// checkStatements refuses a file with no statement, and a statement that
// cannot be part of the file's transaction.
func checkStatements(kind engine.Kind, f File) error {
	stmts := sqlscan.Split(f.Text, kind.ScanDialect())
	if len(stmts) == 0 {
		return exit.Errorf(exit.Migration,
			"%s holds no statement (it is empty, or only comments): an applied file can never change, so write its statements first, or remove it; nothing was applied",
			f.Label())
	}
	for _, s := range stmts {
		if why := kind.OutsideTransaction(s.Text); why != "" {
			return exit.Errorf(exit.Migration,
				"%s:%d: the statement `%s` %s, and each migration file runs in a transaction of its own, with its SCHEMA_MIGRATIONS row; "+
					"take the statement out of the file (run it outside etl-craft if it must run); nothing was applied",
				f.Label(), s.Line, firstLine(s.Text), why)
		}
	}
	return nil
}
