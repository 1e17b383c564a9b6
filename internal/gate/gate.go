// Package gate judges cross-pipeline dependencies: a pipeline's dependencies
// on other pipelines (CFG_PIPELINE_DEPENDENCY), checked when a new run is
// admitted, and a task's dependencies on tasks of other pipelines
// (CFG_TASK_DEPENDENCY rows naming another pipeline), checked when the task's
// attempt is admitted.
//
// One check of a gate (Evaluate) looks at the upstreams without sleeping: while
// an upstream is still running it answers when to look again, and keeps that
// polling budget in AUD_GATE_WAITS so a restart resumes it; otherwise it judges
// each dependency by the upstream's latest finished run and what the dependency
// last consumed, and returns one Decision per judged dependency. The caller
// writes them (Record) in the transaction that admits the run or the attempt,
// carries them over to a retry of the attempt (CarryOver), and consumes the
// satisfied ones (ConsumeRun, ConsumeAttempt) in the transaction that records
// the downstream's success. Await is the blocking loop around Evaluate for a
// process that has nothing else to do meanwhile; SettleWaits ends the waits of
// a run that ended without its gates settling.
//
// The package also owns two pieces of run control that gates read: a run's
// repair state (BeginRepair, PublishRepair: REPAIR_PENDING and
// OUTPUT_REVISION) and pipeline pauses (Pause, Resume, PausedBy).
package gate

import (
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Result is what a gate decided for one dependency (see records.GateResult).
type Result = records.GateResult

// The results of a decision (see records.GateResult).
const (
	Satisfied   = records.GateSatisfied
	Unsatisfied = records.GateUnsatisfied
	Bypassed    = records.GateBypassed
)

// Policy is Orchestration.Dependency_gates: how an unsatisfied gate is treated.
type Policy string

// The policies, spelled as craft-connector.yml spells them.
const (
	// Enforce admits only what is satisfied (the default).
	Enforce Policy = "enforce"
	// Warn judges every dependency and lets the unsatisfied ones through as
	// BYPASSED.
	Warn Policy = "warn"
	// Off judges nothing and lets every dependency through as BYPASSED.
	Off Policy = "off"
)

// Dependency is one cross-pipeline dependency to judge: on another pipeline
// (a CFG_PIPELINE_DEPENDENCY row) or on a task of another pipeline (a
// CFG_TASK_DEPENDENCY row).
type Dependency struct {
	// ID is the PIPELINE_DEPENDENCY_ID, or the TASK_DEPENDENCY_ID when OnTask.
	ID     int64
	OnTask bool
	// UpstreamPipelineID and UpstreamPipeline (its code) name the upstream
	// pipeline; UpstreamTaskID and UpstreamTask the upstream task when OnTask.
	UpstreamPipelineID int64
	UpstreamPipeline   string
	UpstreamTaskID     int64
	UpstreamTask       string
	// Type is SUCCESS, FAILURE, ALWAYS or HAS_DATA.
	Type string
	// ConsumeRepairs lets a repaired upstream run (a higher OUTPUT_REVISION
	// of a run already consumed) satisfy the dependency again.
	ConsumeRepairs bool
}

// Label names the dependency in reasons: "upstream pipeline UP (SUCCESS)" or
// "upstream task UP.publish (SUCCESS)".
func (d Dependency) Label() string {
	if d.OnTask {
		return fmt.Sprintf("upstream task %s.%s (%s)", d.UpstreamPipeline, d.UpstreamTask, d.Type)
	}
	return fmt.Sprintf("upstream pipeline %s (%s)", d.UpstreamPipeline, d.Type)
}

// Gate is one gate to check: the pipeline gate of a run (TaskID 0) or the
// gate of one task under a run.
type Gate struct {
	RunID  int64
	TaskID int64
	Deps   []Dependency
	// Needed is how many of Deps must be satisfied. Checking stops once that
	// many are, and (enforced) once that many no longer can be.
	Needed int
	Policy Policy
	// Wait is the check's whole budget for waiting on running upstreams
	// (Orchestration.Gate_wait_minutes); zero judges at once.
	Wait time.Duration
}

// PipelineGate is the gate a new run of the graph's pipeline passes before it
// becomes IN-PROGRESS: every pipeline dependency must be satisfied.
func PipelineGate(runID int64, g *pipeline.Graph, policy Policy, wait time.Duration) Gate {
	deps := make([]Dependency, 0, len(g.PipelineDeps))
	for _, d := range g.PipelineDeps {
		deps = append(deps, Dependency{ID: d.ID, UpstreamPipelineID: d.UpstreamID, UpstreamPipeline: d.Upstream,
			Type: d.Type, ConsumeRepairs: d.ConsumeRepairs})
	}
	return Gate{RunID: runID, Deps: deps, Needed: len(deps), Policy: policy, Wait: wait}
}

// TaskGate is the gate of a task's dependencies on tasks of other pipelines,
// judged when an attempt of it is about to start under the run. needed is
// how many of them must be satisfied: the task's run condition less the
// same-pipeline dependencies already satisfied.
func TaskGate(runID int64, t *pipeline.Task, needed int, policy Policy, wait time.Duration) Gate {
	var deps []Dependency
	for _, d := range t.Deps {
		if d.CrossPipeline {
			deps = append(deps, Dependency{ID: d.ID, OnTask: true, UpstreamPipelineID: d.UpstreamPipelineID,
				UpstreamPipeline: d.UpstreamPipeline, UpstreamTaskID: d.UpstreamTaskID, UpstreamTask: d.UpstreamTask,
				Type: d.Type, ConsumeRepairs: d.ConsumeRepairs})
		}
	}
	return Gate{RunID: runID, TaskID: t.ID, Deps: deps, Needed: needed, Policy: policy, Wait: wait}
}
