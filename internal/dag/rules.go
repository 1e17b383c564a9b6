package dag

// Trigger rules, sensor states, DAG defaults and the Airflow version range.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// The trigger rules of §6.3.
const (
	allSuccess = "all_success"
	allDone    = "all_done"
)

// triggerRules maps a run condition and the one dependency type of a step's
// upstreams to its trigger rule.
var triggerRules = map[string]map[string]string{
	pipeline.All: {pipeline.Success: allSuccess, pipeline.Failure: "all_failed", pipeline.Always: allDone},
	pipeline.Any: {pipeline.Success: "one_success", pipeline.Failure: "one_failed", pipeline.Always: "one_done"},
}

// ruleFor returns the trigger rule of the condition over the dependency
// types, or all_done when the table has none (several types, HAS_DATA, N):
// in local mode the engine then decides when the step runs.
func ruleFor(condition string, types map[string]bool) string {
	if len(types) == 1 {
		for typ := range types {
			if r, ok := triggerRules[condition][typ]; ok {
				return r
			}
		}
	}
	return allDone
}

// taskRule returns a task step's trigger rule. A step with no upstream step
// of its own gets all_success. In remote mode the step kinds count (a
// sensor stands for a dependency on another pipeline's task); in local mode
// every dependency's own type does.
func taskRule(t *pipeline.Task, hasUpstreamSteps, remote bool) string {
	if !hasUpstreamSteps {
		return allSuccess
	}
	types := map[string]bool{}
	if remote {
		for _, k := range pipeline.StepKinds(t) {
			types[k] = true
		}
	} else {
		for _, d := range t.Deps {
			types[d.Type] = true
		}
	}
	condition := t.RunCondition
	if condition == "" {
		condition = pipeline.All
	}
	return ruleFor(condition, types)
}

// sensor is an ExternalTaskSensor: on a DAG run when task is "", else on
// one of its tasks.
type sensor struct {
	dag, task       string
	allowed, failed []string
}

// Airflow's states of a finished task instance.
var finishedTaskStates = []string{"success", "failed", "upstream_failed", "skipped"}

// pipelineSensor waits for the DAG run of upstream, by dependency type.
func pipelineSensor(upstream, typ string) *sensor {
	s := &sensor{dag: upstream}
	switch typ {
	case pipeline.Failure:
		s.allowed, s.failed = []string{"failed"}, []string{"success"}
	case pipeline.Always:
		s.allowed, s.failed = []string{"success", "failed"}, []string{}
	default:
		s.allowed, s.failed = []string{"success"}, []string{"failed"}
	}
	return s
}

// taskSensorStates waits for the task of the upstream DAG, by dependency
// type.
func taskSensorStates(upstream, task, typ string) *sensor {
	s := &sensor{dag: upstream, task: task}
	switch typ {
	case pipeline.Failure:
		s.allowed, s.failed = []string{"failed", "upstream_failed"}, []string{"success", "skipped"}
	case pipeline.Always:
		s.allowed, s.failed = finishedTaskStates, []string{}
	default:
		s.allowed, s.failed = []string{"success"}, []string{"failed", "upstream_failed", "skipped"}
	}
	return s
}

func (s *sensor) node() *yaml.Node {
	return mapping("external_dag_id", text(s.dag), "external_task_id", textOrNull(s.task),
		"allowed_states", texts(s.allowed), "failed_states", texts(s.failed))
}

func (s *sensor) equal(o *sensor) bool {
	return s.dag == o.dag && s.task == o.task && slices.Equal(s.allowed, o.allowed) && slices.Equal(s.failed, o.failed)
}

// upstream names what the sensor waits for: PIPE or PIPE.task.
func (s *sensor) upstream() string {
	if s.task == "" {
		return "pipeline " + s.dag
	}
	return s.dag + "." + s.task
}

// dagArgs are a DAG's settings after precedence: the pipeline's
// PIPELINE_PARAMETERS, then the Orchestration defaults, then the built-in.
type dagArgs struct {
	owner             string
	catchup           bool
	tags              []string
	retries           int
	retryDelayMinutes int
	dependsOnPast     bool
	emailOnFailure    bool
	email             []string
}

// node writes default_args.
func (a dagArgs) node() *yaml.Node {
	m := mapping("owner", text(a.owner), "retries", integer(a.retries), "retry_delay_minutes", integer(a.retryDelayMinutes),
		"depends_on_past", boolean(a.dependsOnPast), "email_on_failure", boolean(a.emailOnFailure))
	if a.emailOnFailure {
		put(m, "email", texts(a.email))
	}
	return m
}

// The built-in DAG defaults.
const (
	builtinRetries           = 1
	builtinRetryDelayMinutes = 5
	builtinOwner             = "etl-craft"
)

// defaultArgs resolves the DAG settings of the pipeline (a zero Pipeline
// for the global and docs DAGs). A parameter of the wrong type is a
// metadata error (exit 4) naming the pipeline and the parameter.
func defaultArgs(p pipeline.Pipeline, o config.Orchestration) (dagArgs, error) {
	params, err := p.ParametersJSON()
	if err != nil {
		return dagArgs{}, err
	}
	r := paramReader{code: p.Code, params: params}
	a := dagArgs{owner: p.CreatedBy}
	if a.owner == "" {
		a.owner = builtinOwner
	}
	a.catchup = r.flag("CATCHUP", o.Catchup, false)
	a.dependsOnPast = r.flag("DEPENDS_ON_PAST", o.DependsOnPast, false)
	a.emailOnFailure = r.flag("EMAIL_ON_FAILURE", o.EmailOnFailure, false)
	a.retries = r.whole("RETRIES", o.Retries, builtinRetries)
	a.retryDelayMinutes = r.whole("RETRY_DELAY_MINUTES", o.RetryDelayMinutes, builtinRetryDelayMinutes)
	var tags []string
	if p.RefreshType != "" {
		tags = []string{strings.ToLower(p.RefreshType)}
	}
	a.tags = r.strings("TAGS", o.Tags, tags)
	a.email = r.strings("EMAIL_RECIPIENTS", o.EmailRecipients, []string{})
	return a, r.err
}

// EmailRecipients are the pipeline's DAG email recipients, which also
// receive its SLA emails: PIPELINE_PARAMETERS.EMAIL_RECIPIENTS, else
// Orchestration.Email_recipients (empty when neither is set). A parameter
// of the wrong type is a metadata error (exit 4).
func EmailRecipients(p pipeline.Pipeline, o config.Orchestration) ([]string, error) {
	a, err := defaultArgs(p, o)
	return a.email, err
}

// NotifyChannels are the channels the pipeline's SLA breaches go to:
// PIPELINE_PARAMETERS.NOTIFY_CHANNELS, a list of channel names, else def
// (Notifications.Sla_channels). A parameter of the wrong type is a metadata
// error (exit 4).
func NotifyChannels(p pipeline.Pipeline, def []string) ([]string, error) {
	params, err := p.ParametersJSON()
	if err != nil {
		return nil, err
	}
	r := paramReader{code: p.Code, params: params}
	channels := r.strings("NOTIFY_CHANNELS", def, []string{})
	return channels, r.err
}

// paramReader reads typed PIPELINE_PARAMETERS, keeping the first error.
type paramReader struct {
	code   string
	params map[string]any
	err    error
}

func (r *paramReader) bad(name, want string) {
	if r.err == nil {
		r.err = exit.Errorf(exit.Metadata, "CFG_PIPELINES.PIPELINE_PARAMETERS of %s: %s must be %s; got %v",
			r.code, name, want, r.params[name])
	}
}

func (r *paramReader) flag(name string, def *bool, builtin bool) bool {
	if v, ok := r.params[name]; ok {
		if b, ok := v.(bool); ok {
			return b
		}
		r.bad(name, "true or false")
	}
	if def != nil {
		return *def
	}
	return builtin
}

// whole reads a whole number by the configuration file's rule and bound
// (config.WholeNumber).
func (r *paramReader) whole(name string, def *int, builtin int) int {
	if v, ok := r.params[name]; ok {
		text := fmt.Sprint(v)
		if f, isNumber := v.(float64); isNumber {
			text = strconv.FormatFloat(f, 'f', -1, 64)
		}
		n, want, ok := config.WholeNumber(text, 0, config.MaxWhole)
		if ok {
			return n
		}
		r.bad(name, want)
	}
	if def != nil {
		return *def
	}
	return builtin
}

func (r *paramReader) strings(name string, def, builtin []string) []string {
	if v, ok := r.params[name]; ok {
		items, ok := v.([]any)
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, isText := it.(string)
			ok = ok && isText
			out = append(out, s)
		}
		if ok {
			return out
		}
		r.bad(name, "a list of strings")
	}
	if def != nil {
		return def
	}
	return builtin
}

// DefaultAirflowVersion is --airflow-version's default.
const DefaultAirflowVersion = ">=2.2.0"

// remoteFloor is the oldest Airflow a remote DAG runs on: it has the data
// interval the run date comes from.
var remoteFloor = [3]int{2, 2, 0}

var versionClause = regexp.MustCompile(`^(>=|<=|==|!=|~=|>|<)\s*([0-9]+(?:\.[0-9]+){0,2})$`)

// CheckAirflowVersion checks the version range: comma-separated clauses
// such as >=2.2.0 or <3. A remote DAG needs a range whose floor (its
// >=, >, == or ~= clauses) is at least 2.2.0. Mistakes are usage errors
// naming the request's airflow_version field.
func CheckAirflowVersion(rng string, remote bool) error {
	floor := [3]int{}
	for _, clause := range strings.Split(rng, ",") {
		m := versionClause.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return exit.Fieldf(exit.Usage, "{airflow_version} must be a version range such as >=2.2.0 or >=2.2.0,<3; %q is not", rng)
		}
		if m[1] == "<" || m[1] == "<=" || m[1] == "!=" {
			continue
		}
		if v := parseVersion(m[2]); less(floor, v) {
			floor = v
		}
	}
	if remote && less(floor, remoteFloor) {
		return exit.Fieldf(exit.Usage, "{airflow_version} %s allows Airflow before 2.2.0, which has no data_interval_end for the run date; remote DAGs need a range such as >=2.2.0", rng)
	}
	return nil
}

func parseVersion(s string) [3]int {
	var v [3]int
	for i, part := range strings.Split(s, ".") {
		v[i], _ = strconv.Atoi(part)
	}
	return v
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
