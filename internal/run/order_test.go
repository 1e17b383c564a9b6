package run

import (
	"errors"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

func TestAnOrderIsRefusedInItsOwnFieldNames(t *testing.T) {
	for _, c := range []struct {
		order Order
		field string
		text  string
	}{
		{Order{Request: Request{TaskCode: "a"}, InitOnly: true}, "task", "task, init_only and finalize_only each select a step: pass only one"},
		{Order{Rerun: true}, "ignore_dependencies", "ignore_dependencies and rerun apply to one task: pass task"},
		{Order{WithDownstream: true}, "with_downstream", "with_downstream goes with rerun"},
		{Order{Skip: true, Request: Request{RunID: 3, Reason: "r"}}, "skip", "skip records a new run: it takes run_key, not run_id"},
		{Order{Backfill: "2026-01-01"}, "backfill", `backfill "2026-01-01" is not FROM:TO, such as 2026-09-01:2026-09-07`},
		{Order{Request: Request{RunDate: "tomorrow"}}, "run_date", `run_date "tomorrow" is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD`},
		{Order{Request: Request{RunDate: "0000-06-01"}}, "run_date", `run_date "0000-06-01" is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD`},
		{Order{Backfill: "0000-01-01:0000-01-02", Request: Request{Reason: "x"}}, "backfill",
			`backfill 0000-01-01:0000-01-02: "0000-01-01" is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD`},
		{Order{Skip: true, Request: Request{Reason: " "}}, "skip", "skip needs a reason: it is recorded with the change"},
	} {
		err := c.order.Validate()
		var fe *exit.FieldError
		if exit.CodeOf(err) != exit.Usage || !errors.As(err, &fe) || fe.Fields[0] != c.field || err.Error() != c.text {
			t.Errorf("%+v: got %v (fields %v), want %q naming %s first", c.order, err, fe, c.text, c.field)
		}
	}
	ok := Order{Request: Request{TaskCode: "a", Reason: "late data"}, Rerun: true, WithDownstream: true}
	if err := ok.Validate(); err != nil {
		t.Errorf("a rerun with its reason: %v", err)
	}
}
