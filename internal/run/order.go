package run

import (
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Order is everything one run command asks for: the request, and the step
// of a run it takes or the override it makes. Validate checks that its
// fields go together; the supervisor's entry point it names (Pipeline,
// RunTask, InitRun, FinalizeRun, Rerun, Skip or Backfill) does the rest.
//
// Its errors name the request's fields in {field} form (exit.Fieldf):
// pipeline, task, init_only, finalize_only, force, ignore_dependencies,
// rerun, with_downstream, skip, backfill, run_id, run_key, run_date and
// reason.
type Order struct {
	Request
	InitOnly, FinalizeOnly bool
	// Rerun runs the task again (see Supervisor.Rerun), with WithDownstream
	// every task after it too.
	Rerun, WithDownstream bool
	// Skip records a run SKIPPED on purpose (see Supervisor.Skip).
	Skip bool
	// Backfill is FROM:TO (YYYY-MM-DD): one backfill run per date (see
	// Supervisor.Backfill).
	Backfill string
}

// Validate refuses fields that do not go together, or that are malformed,
// before anything is read or recorded (exit 2).
func (o Order) Validate() error {
	steps := 0
	for _, on := range []bool{o.TaskCode != "", o.InitOnly, o.FinalizeOnly} {
		if on {
			steps++
		}
	}
	overrides := o.IgnoreDependencies || o.Rerun || o.Skip || o.Backfill != ""
	selected := o.RunID > 0 || o.RunKey != ""
	switch {
	case steps > 1:
		return usage("{task}, {init_only} and {finalize_only} each select a step: pass only one")
	case o.Force && (o.InitOnly || o.FinalizeOnly):
		return usage("{force} runs tasks; it does not apply to {init_only} or {finalize_only}")
	case (o.IgnoreDependencies || o.Rerun) && o.TaskCode == "":
		return usage("{ignore_dependencies} and {rerun} apply to one task: pass {task}")
	case o.IgnoreDependencies && o.Rerun:
		return usage("{rerun} already runs the task without checking its dependencies: pass one of them")
	case (o.IgnoreDependencies || o.Rerun) && o.Force:
		return usage("{force} and {ignore_dependencies} or {rerun} are different overrides: choose one")
	case o.WithDownstream && !o.Rerun:
		return usage("{with_downstream} goes with {rerun}")
	case o.Skip && (steps > 0 || o.Force || o.Backfill != ""):
		return usage("{skip} records a whole run SKIPPED; it takes only {reason}, {run_key} and {run_date}")
	case o.Backfill != "" && (steps > 0 || o.Force || selected || o.RunDate != ""):
		return usage("{backfill} runs the whole pipeline once per date; it takes only {reason}")
	case o.Reason != "" && !overrides:
		return usage("{reason} goes with {ignore_dependencies}, {rerun}, {skip} or {backfill}")
	case o.Skip && o.RunID > 0:
		return usage("{skip} records a new run: it takes {run_key}, not {run_id}")
	}
	if err := checkText("run_key", o.RunKey); err != nil {
		return err
	}
	if o.Backfill != "" {
		from, to, ok := o.BackfillRange()
		if !ok {
			return exit.Fieldf(exit.Usage, "{backfill} %q is not FROM:TO, such as 2026-09-01:2026-09-07", o.Backfill)
		}
		if _, err := BackfillDates(from, to); err != nil {
			return err
		}
	}
	if err := o.CheckRunDate(); err != nil {
		return err
	}
	switch {
	case o.IgnoreDependencies:
		return CheckReason("{ignore_dependencies}", o.Reason)
	case o.Rerun:
		return CheckReason("{rerun}", o.Reason)
	case o.Skip:
		return CheckReason("{skip}", o.Reason)
	case o.Backfill != "":
		return CheckReason("{backfill}", o.Reason)
	}
	return nil
}

// ParseDate reads a date written YYYY-MM-DD, one of the years 0001 to
// 9999 that every warehouse, script and SQL date holds. It is the one rule
// of the run dates the command line and the API take.
func ParseDate(s string) (time.Time, bool) {
	d, err := time.Parse(time.DateOnly, s)
	return d, err == nil && d.Year() >= 1
}

// CheckRunDate refuses a RunDate that is not a date (ParseDate), a usage
// error (exit 2) naming the run_date field.
func (r Request) CheckRunDate() error {
	if _, ok := ParseDate(r.RunDate); r.RunDate != "" && !ok {
		return exit.Fieldf(exit.Usage, "{run_date} %q is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD", r.RunDate)
	}
	return nil
}

// BackfillRange splits Backfill into its first and last dates; ok is false
// when it is not FROM:TO.
func (o Order) BackfillRange() (from, to string, ok bool) {
	return strings.Cut(o.Backfill, ":")
}

// usage is a usage error (exit 2) whose message names request fields.
func usage(text string) error { return exit.Fieldf(exit.Usage, "%s", text) }
