package retention

import (
	"cmp"
	"context"
	"database/sql"
	"os"
	"slices"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// plan is what a purge deletes, found in one read snapshot, which stays
// open for the archive to read the same rows.
type plan struct {
	db    *engine.DB
	snap  *engine.Snapshot
	rules rules
	// batches are the deletions, one transaction each, in order.
	batches []batch
	// units holds, per planned run, its rows in each unit table (in the
	// order of unitTables).
	units map[int64][]int64
}

// batch is one batch's deletions, in one transaction or in several that
// each take whole pieces of it (deleter.run): the units of runs, or the
// rows of one standalone table by id.
type batch struct {
	runs []int64
	// sizes are how many runs of runs each group of runs referring to each
	// other has, in order: a transaction deletes a group whole.
	sizes []int
	table *standalone
	ids   []int64
}

// pieces splits the batch into the smallest parts a transaction takes
// whole, a group of runs or a row, and returns them with their rows.
func (b batch) pieces(p *plan) ([]batch, []int64) {
	var parts []batch
	var rows []int64
	if b.table != nil {
		for k := range b.ids {
			parts, rows = append(parts, batch{table: b.table, ids: b.ids[k : k+1]}), append(rows, 1)
		}
		return parts, rows
	}
	at := 0
	for _, n := range b.sizes {
		g := b.runs[at : at+n]
		at += n
		var r int64
		for _, id := range g {
			for _, c := range p.units[id] {
				r += c
			}
		}
		parts, rows = append(parts, batch{runs: g, sizes: []int{n}}), append(rows, r)
	}
	return parts, rows
}

// joined is the batch of the parts (pieces of one batch), in order.
func joined(parts []batch) batch {
	out := batch{table: parts[0].table}
	for _, b := range parts {
		out.runs = append(out.runs, b.runs...)
		out.sizes = append(out.sizes, b.sizes...)
		out.ids = append(out.ids, b.ids...)
	}
	return out
}

// chunk is how many ids one statement binds.
const chunk = 1000

// newPlan plans a purge with the cut-offs in a snapshot of db, in batches
// of about batchRows rows.
func newPlan(ctx context.Context, db *engine.DB, cutoffs map[Kind]time.Time, batchRows int) (*plan, error) {
	snap, err := db.BeginSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	p := &plan{db: db, snap: snap, rules: rules{db: db, cutoffs: cutoffs}, units: map[int64][]int64{}}
	if err := p.make(ctx, batchRows); err != nil {
		p.end()
		return nil, err
	}
	return p, nil
}

// end ends the plan's snapshot; it may be called again.
func (p *plan) end() {
	if p.snap != nil {
		p.snap.End()
		p.snap = nil
	}
}

func (p *plan) make(ctx context.Context, batchRows int) error {
	var runBatches []batch
	if _, ok := p.rules.cutoffs[Runs]; ok {
		var err error
		if runBatches, err = p.runs(ctx, batchRows); err != nil {
			return err
		}
	}
	for i := range standalones {
		s := &standalones[i]
		if _, ok := p.rules.cutoffs[s.kind]; !ok {
			continue
		}
		var a args
		rows, err := p.snap.QueryContext(ctx, p.rules.standaloneQuery(&a, *s), a...)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			var run sql.NullInt64
			if err := rows.Scan(&id, &run); err != nil {
				rows.Close()
				return err
			}
			if _, planned := p.units[run.Int64]; !run.Valid || !planned {
				ids = append(ids, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for part := range slices.Chunk(ids, batchRows) {
			p.batches = append(p.batches, batch{table: s, ids: part})
		}
	}
	p.batches = append(p.batches, runBatches...)
	return nil
}

// runs plans the runs that may go: ended before the cut-off, not protected,
// and not referred to by a row that stays; in batches of whole units,
// runs referring to each other together, oldest first.
func (p *plan) runs(ctx context.Context, batchRows int) ([]batch, error) {
	ended, err := p.rules.purgeable(ctx, p.snap, nil)
	if err != nil {
		return nil, err
	}
	old := func(a *args) string { return p.rules.oldRunIDs(a, "") }
	var a args
	runs := old(&a)
	refs, err := references(ctx, p.snap, runs, a)
	if err != nil {
		return nil, err
	}
	keepReferenced(ended, refs)
	for i, u := range unitTables {
		a = nil
		q := u.countsQuery(old(&a))
		if err := p.count(ctx, p.snap, q, a, i, ended); err != nil {
			return nil, err
		}
	}
	for id := range ended {
		if p.units[id] == nil {
			p.units[id] = make([]int64, len(unitTables))
		}
	}
	var out []batch
	var cur batch
	var rows64 int64
	for _, c := range components(ended, refs) {
		cur.runs = append(cur.runs, c...)
		cur.sizes = append(cur.sizes, len(c))
		for _, id := range c {
			for _, n := range p.units[id] {
				rows64 += n
			}
		}
		if rows64 >= int64(batchRows) {
			out, cur, rows64 = append(out, cur), batch{}, 0
		}
	}
	if len(cur.runs) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// count adds to units the rows per run that q (a countsQuery) selects for
// unit table i, of the runs in keep.
func (p *plan) count(ctx context.Context, q querier, query string, a args, i int, keep map[int64]time.Time) error {
	rows, err := q.QueryContext(ctx, query, a...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var run, n int64
		if err := rows.Scan(&run, &n); err != nil {
			return err
		}
		if _, ok := keep[run]; !ok {
			continue
		}
		if p.units[run] == nil {
			p.units[run] = make([]int64, len(unitTables))
		}
		p.units[run][i] = n
	}
	return rows.Err()
}

// reference is a row of run owner (0: of no run) referring to run to.
type reference struct{ owner, to int64 }

// references reads the references to the runs satisfying runs.
func references(ctx context.Context, q querier, runs string, a args) ([]reference, error) {
	rows, err := q.QueryContext(ctx, referencesQuery(runs), a...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reference
	for rows.Next() {
		var owner sql.NullInt64
		var to int64
		if err := rows.Scan(&owner, &to); err != nil {
			return nil, err
		}
		if owner.Int64 != to {
			out = append(out, reference{owner.Int64, to})
		}
	}
	return out, rows.Err()
}

// keepReferenced removes from runs every run a staying row refers to: a row
// of a run not in runs (or of no run), or of a run removed so; and returns
// how many it removed.
func keepReferenced[V any](runs map[int64]V, refs []reference) int {
	from := map[int64][]int64{}
	var queue []int64
	for _, r := range refs {
		if _, going := runs[r.owner]; going {
			from[r.owner] = append(from[r.owner], r.to)
		} else {
			queue = append(queue, r.to)
		}
	}
	kept := 0
	for len(queue) > 0 {
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, going := runs[id]; !going {
			continue
		}
		delete(runs, id)
		kept++
		queue = append(queue, from[id]...)
	}
	return kept
}

// components groups the runs that refer to each other, so that a batch
// deletes them together, and orders the groups oldest first: by their
// latest end, then their lowest id. Each group is in id order.
func components(ended map[int64]time.Time, refs []reference) [][]int64 {
	parent := map[int64]int64{}
	var find func(int64) int64
	find = func(x int64) int64 {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		root := find(p)
		parent[x] = root
		return root
	}
	for _, r := range refs {
		_, a := ended[r.owner]
		_, b := ended[r.to]
		if a && b {
			parent[find(r.owner)] = find(r.to)
		}
	}
	groups := map[int64][]int64{}
	for id := range ended {
		root := find(id)
		groups[root] = append(groups[root], id)
	}
	type group struct {
		ids  []int64
		last time.Time
	}
	var out []group
	for _, ids := range groups {
		slices.Sort(ids)
		g := group{ids: ids}
		for _, id := range ids {
			if ended[id].After(g.last) {
				g.last = ended[id]
			}
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b group) int {
		if c := a.last.Compare(b.last); c != 0 {
			return c
		}
		return cmp.Compare(a.ids[0], b.ids[0])
	})
	res := make([][]int64, len(out))
	for i, g := range out {
		res[i] = g.ids
	}
	return res
}

// counts returns the rows planned per table.
func (p *plan) counts() map[string]int64 {
	out := map[string]int64{}
	for _, b := range p.batches {
		if b.table != nil {
			out[b.table.name] += int64(len(b.ids))
			continue
		}
		for _, id := range b.runs {
			for i, n := range p.units[id] {
				out[unitTables[i].name] += n
			}
		}
	}
	return out
}

// logFiles counts the log files of the planned runs' attempts that exist
// and are not among old (files that go anyway).
func (p *plan) logFiles(ctx context.Context, old []string) (int64, error) {
	var runs []int64
	for _, b := range p.batches {
		runs = append(runs, b.runs...)
	}
	going := map[string]bool{}
	for _, f := range old {
		going[f] = true
	}
	var n int64
	for part := range slices.Chunk(runs, chunk) {
		var a args
		q := "SELECT LOG_PATH FROM AUD_TASK_ATTEMPTS WHERE LOG_PATH IS NOT NULL AND " + attemptsTable.members(a.list(part))
		paths, err := engine.Strings(ctx, p.snap, q, a...)
		if err != nil {
			return 0, err
		}
		for _, path := range paths {
			if _, err := os.Stat(path); err == nil && !going[path] {
				n++
			}
		}
	}
	return n, nil
}
