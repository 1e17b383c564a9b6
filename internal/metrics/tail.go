package metrics

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// Limits of a tail's gaps.
const (
	// gapPatience is how long an id missing below the highest read is
	// looked for: a row whose transaction commits later than one with a
	// higher id appears within it; an id a rolled-back transaction took
	// never does.
	gapPatience = 10 * time.Minute
	// maxGaps is the most ids a tail looks for at once (the newest are
	// kept).
	maxGaps = 500
)

// tail follows the rows a table gains by their ids, which grow: the rows
// above the highest id read, and the ids below it not read yet. A gap
// exists because PostgreSQL hands an id out when a row is inserted, not
// when it commits, so a row may appear below one already read; the gap is
// looked for again until gapPatience has passed.
type tail struct {
	high int64
	gaps map[int64]time.Time // id → when it was first missed
}

// where appends to args the arguments of the condition on the id column col
// that selects the rows not read yet, and returns it.
func (t *tail) where(db *engine.DB, args []any, col string) ([]any, string) {
	args = append(args, t.high)
	high := "$" + strconv.Itoa(len(args))
	args, gaps := db.InIDs(args, col, slices.Collect(maps.Keys(t.gaps)))
	return args, "(" + col + " > " + high + " OR " + gaps + ")"
}

// unread reports whether the row of id is one where selects.
func (t *tail) unread(id int64) bool {
	_, gap := t.gaps[id]
	return id > t.high || gap
}

// read records the ids the condition of where selected, at now: the gaps
// found are forgotten, and so are those older than gapPatience; the ids
// missing between the highest read before and the highest now are gaps.
func (t *tail) read(ids []int64, now time.Time) {
	seen := make(map[int64]bool, len(ids))
	high := t.high
	for _, id := range ids {
		seen[id] = true
		high = max(high, id)
	}
	for id, first := range t.gaps {
		if seen[id] || now.Sub(first) > gapPatience {
			delete(t.gaps, id)
		}
	}
	t.missing(max(t.high+1, high-maxGaps), high, seen, now)
	t.high = high
}

// missing records as gaps the ids from lo up to, not including, hi that
// seen lacks, keeping the newest maxGaps gaps.
func (t *tail) missing(lo, hi int64, seen map[int64]bool, now time.Time) {
	if t.gaps == nil {
		t.gaps = map[int64]time.Time{}
	}
	for id := lo; id < hi; id++ {
		if !seen[id] {
			t.gaps[id] = now
		}
	}
	for len(t.gaps) > maxGaps {
		oldest := hi
		for id := range t.gaps {
			oldest = min(oldest, id)
		}
		delete(t.gaps, oldest)
	}
}

// begin starts the tail at the highest id high, given the ids of the rows
// read up to it (at least those above high-maxGaps), at now: the ids near
// the top that are missing are gaps.
func (t *tail) begin(high int64, read []int64, now time.Time) {
	seen := make(map[int64]bool, len(read))
	for _, id := range read {
		seen[id] = true
	}
	t.gaps = nil
	t.missing(max(1, high-maxGaps), high, seen, now)
	t.high = high
}
