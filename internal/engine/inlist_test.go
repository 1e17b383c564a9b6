package engine_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// TestInIDsBindsAnyNumberOfIDsAsOneArgument: the condition selects exactly
// the ids given, none, or more than an IN list holds, after other
// arguments, with the same statement text whatever their number.
func TestInIDsBindsAnyNumberOfIDsAsOneArgument(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "CREATE TABLE ids (id BIGINT PRIMARY KEY, tag VARCHAR NOT NULL)"); err != nil {
				return err
			}
			for id := range int64(2000) {
				tag := "even"
				if id%2 == 1 {
					tag = "odd"
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO ids (id, tag) VALUES ($1, $2)", id, tag); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		many := make([]int64, 0, 1000)
		for id := int64(1); id < 2000; id += 2 {
			many = append(many, id)
		}
		var texts []string
		for _, ids := range [][]int64{nil, {}, {7}, {3, 4, 1999, 5000}, many} {
			args, cond := db.InIDs([]any{"odd"}, "id", ids)
			query := "SELECT id FROM ids WHERE tag = $1 AND " + cond + " ORDER BY id"
			texts = append(texts, query)
			got := enginetest.Rows(t, db, query, args...)
			var want []string
			for _, id := range slices.Sorted(slices.Values(ids)) {
				if id%2 == 1 && id < 2000 {
					want = append(want, strconv.FormatInt(id, 10))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("ids %v: got %v, want %v", ids, got, want)
			}
		}
		if texts = slices.Compact(texts); len(texts) != 1 {
			t.Errorf("the statement's text changed with the number of ids: %q", texts)
		}
	})
}
