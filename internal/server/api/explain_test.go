package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
)

// explained is an etl-craft/explain/1 document as the test reads it.
type explained struct {
	Schema       string `json:"schema"`
	State        string `json:"state"`
	Dependencies []struct {
		Upstream string  `json:"upstream"`
		Type     string  `json:"type"`
		Status   *string `json:"status"`
		Met      string  `json:"met"`
		Reason   string  `json:"reason"`
	} `json:"dependencies"`
	Next string `json:"next"`
}

// On the dependency matrix (every dependency type on an upstream that wrote
// rows, one that wrote none and one that failed, run conditions ANY and ALL,
// and a task behind one that can never run), explain gives each task the
// state the readiness rule gives it, status lists as blocked by failures
// exactly the tasks explain says wait on a failure, and the dispatcher then
// runs the READY tasks and skips the others.
func TestExplainAgreesWithStatusAndTheDispatcher(t *testing.T) {
	eachKind(t, func(t *testing.T, f *fixture) {
		tk := f.newTokens()
		f.b.Pipeline("X", "FULL")
		f.sqlTask("X", "ok")
		f.b.Task("X", "empty", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.x_empty",
			"SOURCE_SQL": "SELECT 1 AS id WHERE 1 = 0"})
		f.b.Task("X", "bad", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.x_bad",
			"SOURCE_SQL": "SELECT * FROM main.no_such_table"})
		// What explain says of each task before the dispatcher runs (a task
		// waiting on a failure either runs once failures are final, or is
		// blocked by them), and what the dispatcher then makes of it.
		type expect struct{ state, ends string }
		ready, blocked := expect{"READY", "SUCCESS"}, expect{"BLOCKED", "SKIPPED"}
		runsOnceFinal, blockedByFailures := expect{"WAITING", "SUCCESS"}, expect{"WAITING", "SKIPPED"}
		want := map[string]expect{}
		for typ, states := range map[string][3]expect{
			pipeline.Success: {ready, ready, blockedByFailures},
			pipeline.Failure: {blocked, blocked, runsOnceFinal},
			pipeline.Always:  {ready, ready, runsOnceFinal},
			pipeline.HasData: {ready, blocked, blockedByFailures},
		} {
			for i, up := range []string{"ok", "empty", "bad"} {
				code := strings.ToLower(typ) + "_on_" + up
				f.sqlTask("X", code)
				f.b.Dep("X", code, "X", up, typ)
				want[code] = states[i]
			}
		}
		for code, cond := range map[string]string{"any_of_ok_bad": "ANY", "all_of_ok_bad": "ALL"} {
			f.sqlTask("X", code)
			f.b.Dep("X", code, "X", "ok", pipeline.Success)
			f.b.Dep("X", code, "X", "bad", pipeline.Success)
			f.b.Condition("X", code, cond, 0)
		}
		want["any_of_ok_bad"], want["all_of_ok_bad"] = ready, blockedByFailures
		f.sqlTask("X", "behind_blocked")
		f.b.Dep("X", "behind_blocked", "X", "failure_on_ok", pipeline.Success)
		want["behind_blocked"] = blocked

		id := f.initRun("X")
		for _, up := range []string{"ok", "empty", "bad"} {
			if _, err := f.p.Supervisor().RunTask(acting(), run.Request{PipelineCode: "X", TaskCode: up}); err != nil {
				t.Fatalf("%s: %v", up, err)
			}
		}
		var st struct {
			BlockedByFailures []string `json:"blocked_by_failures"`
		}
		f.call(tk.viewer, "GET", fmt.Sprintf("/runs/%d/tasks", id), nil).decode(t, &st)
		for code, w := range want {
			var e explained
			f.call(tk.viewer, "GET", fmt.Sprintf("/runs/%d/tasks/%s/explain", id, code), nil).decode(t, &e)
			if e.Schema != "etl-craft/explain/1" || e.State != w.state {
				t.Errorf("%s: explain says %s, the rule %s (%s)", code, e.State, w.state, e.Next)
			}
			if listed := slices.Contains(st.BlockedByFailures, code); listed != (w == blockedByFailures) ||
				listed != strings.Contains(e.Next, "the run skips it") {
				t.Errorf("%s: explain says %s (%s); status lists it blocked by failures: %v", code, e.State, e.Next, listed)
			}
			if (w == runsOnceFinal) != strings.Contains(e.Next, "starts with the upstreams as they ended") {
				t.Errorf("%s: next: %s", code, e.Next)
			}
		}
		var e explained
		f.call(tk.viewer, "GET", fmt.Sprintf("/runs/%d/tasks/has_data_on_empty/explain", id), nil).decode(t, &e)
		if len(e.Dependencies) != 1 || e.Dependencies[0].Met != "no" || *e.Dependencies[0].Status != "SUCCESS" ||
			!strings.Contains(e.Dependencies[0].Reason, "without rows") {
			t.Errorf("has_data_on_empty's dependency: %+v", e.Dependencies)
		}
		f.call(tk.viewer, "GET", fmt.Sprintf("/runs/%d/tasks/success_on_bad/explain", id), nil).decode(t, &e)
		if e.Dependencies[0].Met != "open" || *e.Dependencies[0].Status != "FAILED" || !strings.Contains(e.Next, "skips it") {
			t.Errorf("success_on_bad: %+v %s", e.Dependencies, e.Next)
		}

		// The dispatcher takes the rest of the run.
		f.runPipeline(run.Request{PipelineCode: "X", RunID: id})
		for code, w := range want {
			var after explained
			f.call(tk.viewer, "GET", fmt.Sprintf("/runs/%d/tasks/%s/explain", id, code), nil).decode(t, &after)
			if after.State != w.ends {
				t.Errorf("%s: explain said %s, so it should end %s; the dispatcher left it %s", code, w.state, w.ends, after.State)
			}
		}
	})
}
