package run

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// Task parameters every task may set.
const (
	ParamTimeout      = "TASK_TIMEOUT_SECONDS"
	ParamRetries      = "RETRIES"
	ParamRetryDelay   = "RETRY_DELAY_SECONDS"
	ParamRetryBackoff = "RETRY_BACKOFF"
)

// Retry defaults and the cap on any delay.
const (
	DefaultRetryDelay   = 60 * time.Second
	DefaultRetryBackoff = 2.0
	MaxRetryDelay       = 3600 * time.Second
)

// Policy is how one task is run: its time limit and its retries.
type Policy struct {
	// Timeout limits an attempt; zero means no limit.
	Timeout time.Duration
	// Retries is how many extra attempts a failure may get.
	Retries int
	// Delay is the wait before the first retry; Backoff multiplies it for
	// each later one, up to MaxRetryDelay.
	Delay   time.Duration
	Backoff float64
}

// Defaults are the settings a task's parameters override.
type Defaults struct {
	// TaskTimeout is Orchestration.Task_timeout_seconds; zero means none.
	TaskTimeout time.Duration
	// Retries is Orchestration.Retries.
	Retries int
}

// PolicyOf reads a task's policy from its parameters over the defaults. A
// malformed value is a metadata error naming the task and parameter. Whole
// numbers follow the configuration file's rule, bound and words
// (config.WholeNumber), so no number of seconds overflows a duration.
func PolicyOf(g *pipeline.Graph, t *pipeline.Task, d Defaults) (Policy, error) {
	p := Policy{Timeout: d.TaskTimeout, Retries: d.Retries, Delay: DefaultRetryDelay, Backoff: DefaultRetryBackoff}
	bad := func(name, value, want string) error {
		return exit.Errorf(exit.Metadata,
			"%s.%s: CFG_TASK_PARAMETERS %s must be %s; got '%s'; fix it in a project migration",
			g.Pipeline.Code, t.Code, name, want, value)
	}
	// whole reads a whole-number parameter; set is false when the task
	// has none.
	whole := func(name string) (n int, set bool, err error) {
		v, set := t.Params[name]
		if !set {
			return 0, false, nil
		}
		n, want, ok := config.WholeNumber(strings.TrimSpace(v), 0, config.MaxWhole)
		if !ok {
			return 0, true, bad(name, v, want)
		}
		return n, true, nil
	}
	if n, set, err := whole(ParamTimeout); err != nil {
		return p, err
	} else if set {
		p.Timeout = time.Duration(n) * time.Second
	}
	if n, set, err := whole(ParamRetries); err != nil {
		return p, err
	} else if set {
		p.Retries = n
	}
	if n, set, err := whole(ParamRetryDelay); err != nil {
		return p, err
	} else if set {
		p.Delay = min(time.Duration(n)*time.Second, MaxRetryDelay)
	}
	if v, ok := t.Params[ParamRetryBackoff]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 1 || math.IsInf(f, 0) || math.IsNaN(f) {
			return p, bad(ParamRetryBackoff, v, "a finite number of 1 or more")
		}
		p.Backoff = f
	}
	return p, nil
}

// RetryDelay returns the wait before retry n (1 for the first): Delay
// multiplied by Backoff once per earlier retry, at most MaxRetryDelay.
func (p Policy) RetryDelay(n int) time.Duration {
	d := float64(p.Delay)
	for i := 1; i < n && d < float64(MaxRetryDelay); i++ {
		d *= p.Backoff
	}
	return min(time.Duration(d), MaxRetryDelay)
}
