package run

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// I01, I16: marking a failed task SUCCESS reopens the ended run, records
// MARK (with the previous message), REOPEN and a RESET per task its failure
// skipped, keeps a skipped task another pipeline judged, and the resumed run
// ends SUCCESS publishing the repair.
func TestMarkingAFailedTaskReopensTheRunAndResetsWhatItsFailureSkipped(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "extract", "fail")
		f.task("P", "load", "succeed")
		f.task("P", "publish", "succeed")
		f.task("P", "alert", "succeed")
		f.b.Dep("P", "load", "P", "extract", pipeline.Success)
		f.b.Dep("P", "publish", "P", "extract", pipeline.Success)
		f.b.Dep("P", "alert", "P", "extract", pipeline.Failure)
		f.b.Pipeline("WATCH", "FULL")
		f.task("WATCH", "w", "succeed")
		f.b.Dep("WATCH", "w", "P", "publish", pipeline.Always)
		out := f.runPipeline("P")
		if out.Status != RunFailed || fmt.Sprint(f.statuses(out.RunID)) != "map[alert:SUCCESS extract:FAILED load:SKIPPED publish:SKIPPED]" {
			t.Fatalf("%q %v", out.String(), f.statuses(out.RunID))
		}
		// Another pipeline's gate judges the skipped publish, and consumes it.
		if w := f.runPipeline("WATCH"); w.Status != RunSuccess {
			t.Fatalf("%q", w.String())
		}
		rows := int64(5)
		c, err := f.supervisor().Mark(f.ctx(), MarkRequest{PipelineCode: "P", TaskCode: "extract", RunID: out.RunID,
			Status: TaskSuccess, Rows: &rows, Reason: "loaded by hand"})
		want := fmt.Sprintf("P.extract: marked SUCCESS under pipeline_run_id=%d (was FAILED); the run was FAILED and is IN-PROGRESS again; "+
			"reset to run again: load; kept SKIPPED: publish (consumed by pipeline_run_id=", out.RunID)
		if err != nil || !strings.HasPrefix(c.Message, want) || !strings.HasSuffix(exit.Flags(c.Message), ". etl-craft run --pipeline_code P resumes it") {
			t.Fatalf("%q %v", c.Message, err)
		}
		by := " by tester@host HUMAN"
		if got := f.interventions(out.RunID); fmtList(got) != fmtList([]string{"MARK extract FAILED>SUCCESS loaded by hand" + by,
			"REOPEN - FAILED>IN-PROGRESS loaded by hand" + by, "RESET load SKIPPED>- loaded by hand" + by}) {
			t.Fatalf("interventions %v", got)
		}
		var previous string
		var target int64
		f.scalar(&previous, "SELECT PREVIOUS_MESSAGE FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'MARK'")
		f.scalar(&target, "SELECT TARGET_COUNT FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'MARK'")
		msg := f.nullString(`SELECT t.ERROR_MESSAGE || ' ' || CAST(t.ROWS_WRITTEN AS VARCHAR) FROM AUD_TASK_RUN_LOG t
			WHERE t.PIPELINE_RUN_ID = $1 AND t.TASK_ID = $2`, out.RunID, f.b.TaskID("P", "extract"))
		if previous != "the source file is missing" || target != 5 || msg.String != "marked SUCCESS by tester@host: loaded by hand 5" {
			t.Fatalf("previous %q target %d message %q", previous, target, msg.String)
		}
		if f.runStatus(out.RunID) != RunInProgress {
			t.Fatalf("the run is %s", f.runStatus(out.RunID))
		}
		again := f.runPipeline("P")
		var revision int
		f.scalar(&revision, "SELECT OUTPUT_REVISION FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if again.RunID != out.RunID || again.Status != RunSuccess || revision != 2 || fmtList(f.attempts(out.RunID, "extract")) != "[FAILED]" ||
			f.statuses(out.RunID)["load"] != TaskSuccess || f.statuses(out.RunID)["publish"] != TaskSkipped {
			t.Fatalf("%q revision %d statuses %v", again.String(), revision, f.statuses(out.RunID))
		}
	})
}

// I03, I04, I02, I11: a run marked SUCCESS satisfies a downstream gate and its
// tasks keep their statuses; a stand-in run satisfies gates like a real run
// (HAS_DATA only with a row count); a run skipped on purpose does not satisfy
// a SUCCESS dependency.
func TestMarkedStandInAndSkippedRunsAsGatesJudgeThem(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "fail")
		f.b.Pipeline("DOWN", "FULL")
		f.task("DOWN", "load", "succeed")
		f.b.PipelineDep("DOWN", "UP", pipeline.Success)
		f.b.Pipeline("ROWS", "FULL")
		f.task("ROWS", "count", "succeed")
		f.b.Dep("ROWS", "count", "UP", "publish", pipeline.HasData)
		s := f.supervisor()
		up := f.runPipeline("UP")
		c, err := s.Mark(f.ctx(), MarkRequest{PipelineCode: "UP", RunID: up.RunID, Status: RunSuccess, Reason: "checked the output by hand"})
		if err != nil || c.Message != fmt.Sprintf("UP: pipeline_run_id=%d marked SUCCESS (was FAILED)", up.RunID) ||
			f.statuses(up.RunID)["publish"] != TaskFailed {
			t.Fatalf("%q %v %v", c.Message, err, f.statuses(up.RunID))
		}
		var endedBy string
		f.scalar(&endedBy, "SELECT ENDED_BY || ' ' || ENDED_BY_KIND FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", up.RunID)
		if endedBy != "tester@host HUMAN" || fmtList(f.interventions(up.RunID)) != "[MARK - FAILED>SUCCESS checked the output by hand by tester@host HUMAN]" {
			t.Fatalf("ended by %s, interventions %v", endedBy, f.interventions(up.RunID))
		}
		if out := f.runPipeline("DOWN"); out.Status != RunSuccess {
			t.Fatalf("after the mark: %q", out.String())
		}

		rows := int64(4)
		standIn, err := s.StandIn(f.ctx(), MarkRequest{PipelineCode: "UP", TaskCode: "publish", Status: TaskSuccess, Rows: &rows,
			Reason: "loaded in the old system"})
		if err != nil || standIn.Message != fmt.Sprintf("UP.publish: stand-in run pipeline_run_id=%d recorded SUCCESS with 4 row(s)", standIn.RunID) {
			t.Fatalf("%q %v", standIn.Message, err)
		}
		var row string
		f.scalar(&row, "SELECT TRIGGER_KIND || ' ' || STATUS || ' ' || RUN_KEY FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", standIn.RunID)
		if !strings.HasPrefix(row, "STAND_IN SUCCESS stand-in:") ||
			fmtList(f.interventions(standIn.RunID)) != "[NEW_RUN publish ->SUCCESS loaded in the old system by tester@host HUMAN]" {
			t.Fatalf("%s %v", row, f.interventions(standIn.RunID))
		}
		if out := f.runPipeline("ROWS"); out.Status != RunSuccess {
			t.Fatalf("a stand-in with rows: %q", out.String())
		}
		if _, err := s.StandIn(f.ctx(), MarkRequest{PipelineCode: "UP", TaskCode: "publish", Status: TaskSuccess, Reason: "again"}); err != nil {
			t.Fatal(err)
		}
		if out := f.runPipeline("ROWS"); out.Status != RunSkipped {
			t.Fatalf("a stand-in without rows: %q", out.String())
		}

		skipped, err := s.Skip(f.ctx(), Request{PipelineCode: "UP", Reason: "holiday"})
		if err != nil || skipped.String() != fmt.Sprintf("UP: pipeline_run_id=%d SKIPPED — skipped on purpose: holiday", skipped.RunID) ||
			fmtList(f.interventions(skipped.RunID)) != "[NEW_RUN - ->SKIPPED holiday by tester@host HUMAN]" {
			t.Fatalf("%q %v %v", skipped.String(), err, f.interventions(skipped.RunID))
		}
		if out := f.runPipeline("DOWN"); out.Status != RunSkipped ||
			out.Detail != fmt.Sprintf("upstream pipeline UP (SUCCESS) last finished run %d ended SKIPPED, which does not satisfy a SUCCESS dependency", skipped.RunID) {
			t.Fatalf("after a skip: %q", out.String())
		}
	})
}

// I06: what mark, stand-in, skip and cancel refuse.
func TestOperatorRefusals(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		s := f.supervisor()
		mark := func(req MarkRequest) error {
			req.PipelineCode = "P"
			_, err := s.Mark(f.ctx(), req)
			return err
		}
		rows, negative := int64(3), int64(-1)
		wantCode(t, mark(MarkRequest{TaskCode: "a", Status: TaskSuccess, Reason: "x"}), exit.RunState, "matched 0 runs")
		wantCode(t, mark(MarkRequest{TaskCode: "a", Status: TaskSuccess, Reason: " "}), exit.Usage, "needs a --reason")
		wantCode(t, mark(MarkRequest{TaskCode: "a", Status: RunCancelled, Reason: "x"}), exit.Usage, `cannot mark "CANCELLED"`)
		wantCode(t, mark(MarkRequest{TaskCode: "a", Status: TaskFailed, Rows: &rows, Reason: "x"}), exit.Usage, "--rows goes with SUCCESS")
		wantCode(t, mark(MarkRequest{TaskCode: "a", Status: TaskSuccess, Rows: &negative, Reason: "x"}), exit.Usage, "cannot be negative")
		out := f.runPipeline("P")
		wantCode(t, mark(MarkRequest{TaskCode: "a", RunID: out.RunID, Status: TaskSuccess, Reason: "x"}), exit.Usage,
			fmt.Sprintf("P.a is already SUCCESS under pipeline_run_id=%d", out.RunID))
		wantCode(t, mark(MarkRequest{RunID: out.RunID, Status: RunSuccess, Reason: "x"}), exit.Usage, "is already SUCCESS")
		open := f.openRun("P")
		_, err := s.StandIn(f.ctx(), MarkRequest{PipelineCode: "P", Status: TaskSuccess, Reason: "x"})
		wantCode(t, err, exit.RunState, fmt.Sprintf("has a run in progress (pipeline_run_id=%d); mark that run (--run-id %d), "+
			"or cancel it (etl-craft cancel --pipeline_code P --run-id %d --reason …)", open, open, open))
		_, err = s.Skip(f.ctx(), Request{PipelineCode: "P", Reason: "x"})
		wantCode(t, err, exit.RunState, "has a run in progress")
		_, err = s.Cancel(f.ctx(), CancelRequest{PipelineCode: "P", RunID: out.RunID, Reason: "x"})
		wantCode(t, err, exit.RunState, "ended SUCCESS; only a QUEUED or IN-PROGRESS run can be cancelled")

		remote := f.supervisorWith(func(o *Options) { o.Remote = true })
		const truth = "the orchestrator is the only source of truth"
		_, err = remote.Mark(f.ctx(), MarkRequest{PipelineCode: "P", TaskCode: "a", Status: TaskSuccess, Reason: "x"})
		wantCode(t, err, exit.RunRefused, truth)
		_, err = remote.StandIn(f.ctx(), MarkRequest{PipelineCode: "P", Status: TaskSuccess, Reason: "x"})
		wantCode(t, err, exit.RunRefused, truth)
		_, err = remote.Cancel(f.ctx(), CancelRequest{PipelineCode: "P", Reason: "x"})
		wantCode(t, err, exit.RunRefused, truth)
		_, err = remote.Skip(f.ctx(), Request{PipelineCode: "P", Reason: "x"})
		wantCode(t, err, exit.RunRefused, truth)
		_, err = remote.Rerun(f.ctx(), Request{PipelineCode: "P", TaskCode: "a", Reason: "x"}, false)
		wantCode(t, err, exit.RunRefused, truth)
		_, err = remote.RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "a", IgnoreDependencies: true, Reason: "x"})
		wantCode(t, err, exit.RunRefused, truth)
		_, err = remote.RunPipeline(f.ctx(), Request{PipelineCode: "P"})
		wantCode(t, err, exit.RunRefused, "only local mode runs a whole pipeline")
		if n := f.count("SELECT count(*) FROM AUD_RUN_INTERVENTIONS"); n != 0 {
			t.Fatalf("%d interventions recorded by refusals", n)
		}
	})
}

// I05: cancel stops a run while it runs: the running task and the run end
// CANCELLED, nothing starts after, and the interventions are CANCEL (task)
// then CANCEL (run); marking the running task is refused. A single-task run
// is stopped by its attempt's own look at its status.
func TestCancelStopsRunningWork(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "first", "block")
		f.task("P", "second", "succeed")
		f.b.Dep("P", "second", "P", "first", pipeline.Success)
		done := make(chan Outcome)
		go func() { done <- f.runPipeline("P") }()
		f.h.waitStarted(t, "first")
		s := f.supervisor()
		_, err := s.Mark(f.ctx(), MarkRequest{PipelineCode: "P", TaskCode: "first", Status: TaskSuccess, Reason: "x"})
		wantCode(t, err, exit.RunRefused, "P.first is running under pipeline_run_id=")
		c, err := s.Cancel(f.ctx(), CancelRequest{PipelineCode: "P", Reason: "wrong day"})
		if err != nil || !strings.HasSuffix(c.Message, "CANCELLED; stopping 1 running task(s): first (the process running each stops it within a few seconds)") {
			t.Fatalf("%q %v", c.Message, err)
		}
		out := <-done
		by := " wrong day by tester@host HUMAN"
		if out.Status != RunCancelled || out.Code != exit.Failure || fmtList(f.attempts(out.RunID, "first")) != "[CANCELLED]" ||
			f.statuses(out.RunID)["second"] != "" || fmtList(f.interventions(out.RunID)) !=
			fmtList([]string{"CANCEL first IN-PROGRESS>CANCELLED" + by, "CANCEL - IN-PROGRESS>CANCELLED" + by}) {
			t.Fatalf("%q attempts %v statuses %v interventions %v", out.String(), f.attempts(out.RunID, "first"), f.statuses(out.RunID),
				f.interventions(out.RunID))
		}

		// A task run on its own, in another supervisor, whose attempt looks
		// at its own status.
		run := f.openRun("P")
		task := make(chan Outcome)
		own := f.supervisor()
		own.cancelPoll = 50 * time.Millisecond
		go func() {
			out, err := own.RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "first", RunID: run})
			if err != nil {
				t.Errorf("the task: %v", err)
			}
			task <- out
		}()
		f.h.waitStarted(t, "first")
		if _, err := s.Cancel(f.ctx(), CancelRequest{PipelineCode: "P", RunID: run, Reason: "stop"}); err != nil {
			t.Fatal(err)
		}
		if got := <-task; got.Status != TaskCancelled || got.Code != exit.Failure || fmtList(f.attempts(run, "first")) != "[CANCELLED]" {
			t.Fatalf("%q %v", got.String(), f.attempts(run, "first"))
		}
	})
}

// I08, I09: --ignore-dependencies runs a waiting task under the run in
// progress; --rerun runs a task of an ended run again, reopening it, and
// with --with-downstream its dependents too; each is recorded.
func TestIgnoreDependenciesAndRerun(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "extract", "fail")
		f.task("P", "load", "succeed")
		f.task("P", "publish", "succeed")
		f.b.Dep("P", "load", "P", "extract", pipeline.Success)
		f.b.Dep("P", "publish", "P", "load", pipeline.Success)
		s := f.supervisor()
		by := " by tester@host HUMAN"

		open := f.openRun("P")
		if out := f.runTask(Request{PipelineCode: "P", TaskCode: "load"}); out.Code != exit.Waiting {
			t.Fatalf("%q", out.String())
		}
		_, err := s.RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "load", IgnoreDependencies: true})
		wantCode(t, err, exit.Usage, "--ignore-dependencies needs a --reason")
		_, err = s.RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "load", IgnoreDependencies: true, Force: true, Reason: "x"})
		wantCode(t, err, exit.Usage, "choose one")
		out := f.runTask(Request{PipelineCode: "P", TaskCode: "load", IgnoreDependencies: true, Reason: "the source is fine"})
		if out.Status != TaskSuccess || fmtList(f.interventions(open)) != "[IGNORE_DEPENDENCIES load ->IN-PROGRESS the source is fine"+by+"]" {
			t.Fatalf("%q %v", out.String(), f.interventions(open))
		}
		if again := f.runTask(Request{PipelineCode: "P", TaskCode: "load", IgnoreDependencies: true, Reason: "y"}); again.Status != TaskSuccess ||
			!strings.HasPrefix(again.Detail, "already SUCCESS") {
			t.Fatalf("%q", again.String())
		}
		f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'FAILED', END_DATE = $1 WHERE PIPELINE_RUN_ID = $2", f.db.TimeArg(time.Now()), open)

		// A failed run: its failure skipped load and publish.
		failed := f.runPipeline("P")
		f.setBehaviour("P", "extract", "succeed")
		rerun, err := s.Rerun(f.ctx(), Request{PipelineCode: "P", TaskCode: "extract", RunID: failed.RunID, Reason: "the file arrived"}, false)
		if err != nil || rerun.Status != RunInProgress ||
			exit.Flags(rerun.Detail) != "ran again: extract (SUCCESS); reset to run again: load, publish; 2 task(s) still need to run: load, publish; "+
				"etl-craft run --pipeline_code P runs them" {
			t.Fatalf("%q %v", rerun.String(), err)
		}
		if got := f.interventions(failed.RunID); fmtList(got) != fmtList([]string{"REOPEN - FAILED>IN-PROGRESS the file arrived" + by,
			"RERUN extract FAILED>IN-PROGRESS the file arrived" + by, "RESET load SKIPPED>- the file arrived" + by,
			"RESET publish SKIPPED>- the file arrived" + by}) {
			t.Fatalf("interventions %v", got)
		}
		if resumed := f.runPipeline("P"); resumed.RunID != failed.RunID || resumed.Status != RunSuccess {
			t.Fatalf("%q", resumed.String())
		}
		// With the tasks downstream, on the ended run.
		down, err := s.Rerun(f.ctx(), Request{PipelineCode: "P", TaskCode: "load", RunID: failed.RunID, Reason: "rebuild"}, true)
		if err != nil || down.Status != RunSuccess || down.Detail != "ran again: load (SUCCESS), publish (SUCCESS)" ||
			fmtList(f.attempts(failed.RunID, "publish")) != "[SUCCESS SUCCESS]" {
			t.Fatalf("%q %v %v", down.String(), err, f.attempts(failed.RunID, "publish"))
		}
		var revision int
		f.scalar(&revision, "SELECT OUTPUT_REVISION FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", failed.RunID)
		if revision != 3 {
			t.Fatalf("revision %d after two repairs", revision)
		}
	})
}

// I13: a task whose process may be gone can be marked only with --stale,
// and only once reconcile has fenced it: here, a process of another host
// once its lease has been expired for the grace.
func TestMarkingAStaleTask(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		q, _ := l.runningAttempt(Process{Host: "elsewhere.example", PID: 42, Start: "7"})
		s := l.supervisor()
		req := MarkRequest{PipelineCode: "P", TaskCode: "t1", Status: TaskSuccess, Reason: "it finished before the crash"}
		_, err := s.Mark(l.ctx(), req)
		wantCode(t, err, exit.RunRefused, "pass --stale")
		req.Stale = true
		_, err = s.Mark(l.ctx(), req)
		wantCode(t, err, exit.RunRefused, "its lease is live")
		l.expireAttempt(q.AttemptID, ForeignGrace+time.Second)
		c, err := s.Mark(l.ctx(), req)
		if err != nil || !strings.HasPrefix(c.Message, "P.t1: marked SUCCESS under pipeline_run_id=") || l.summary(q.TaskRunID) !=
			"SUCCESS|1|marked SUCCESS by tester@host: it finished before the crash" || fmtList(l.attempts(l.run, "t1")) != "[LOST]" {
			t.Fatalf("%q %v %s %v", c.Message, err, l.summary(q.TaskRunID), l.attempts(l.run, "t1"))
		}
	})
}

// A rerun of an ended run holds the run it reopened while the task runs
// again: a server (another supervisor) finds a run it may not take, not an
// unowned run whose queued attempt it would claim before the rerun does
// (the console's rerun under a server was refused "cannot claim: expected
// status QUEUED and due, found status RUNNING" that way). Once the rerun
// has ended the run again, nobody holds it.
func TestARerunHoldsTheRunItReopened(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "fail")
		failed := f.runPipeline("P")
		f.h.waitStarted(t, "a") // the failed attempt's start
		f.setBehaviour("P", "a", "block")
		done := make(chan Outcome)
		go func() {
			out, err := f.supervisor().Rerun(f.ctx(), Request{PipelineCode: "P", TaskCode: "a", RunID: failed.RunID, Reason: "fixed"}, false)
			if err != nil {
				t.Error(err)
			}
			done <- out
		}()
		f.h.waitStarted(t, "a")
		if owner := f.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", failed.RunID); !owner.Valid {
			t.Error("the reopened run has no owner while its task runs again")
		}
		wantCode(t, f.tx(func(tx *wtx) error { return takeRun(f.ctx(), tx, failed.RunID, NewOwner(), time.Now()) }),
			exit.StaleTransition, "is supervised by")
		close(f.h.gate("a"))
		if out := <-done; out.Status != RunSuccess {
			t.Fatalf("%q", out.String())
		}
		if owner := f.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", failed.RunID); owner.Valid {
			t.Fatalf("the ended run is held by %s", owner.String)
		}
	})
}
