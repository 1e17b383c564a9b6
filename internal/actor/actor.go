// Package actor says who is acting: the name and kind recorded with every
// Engine DB change. The CLI resolves one actor per command from the
// environment; library callers scope one on a context.Context, and work with
// none runs as the engine's SYSTEM actor.
package actor

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"unicode/utf8"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/freetext"
)

// Kind is the kind of actor.
type Kind string

// The actor kinds the Engine DB accepts.
const (
	Human        Kind = "HUMAN"
	Schedule     Kind = "SCHEDULE"
	Orchestrator Kind = "ORCHESTRATOR"
	Worker       Kind = "WORKER"
	System       Kind = "SYSTEM"
)

// Kinds lists every actor kind.
var Kinds = []Kind{Human, Schedule, Orchestrator, Worker, System}

// Environment variables that identify the actor of a command.
const (
	NameVariable = "ETL_CRAFT_ACTOR"
	KindVariable = "ETL_CRAFT_ACTOR_KIND"
	// DAGRunVariable and TriggeredByVariable carry a remote orchestrator's
	// DAG run id and triggering user, recorded with the command's action.
	DAGRunVariable      = "ETL_CRAFT_DAG_RUN_ID"
	TriggeredByVariable = "ETL_CRAFT_TRIGGERED_BY"
)

// MaxNameLength is the longest actor name accepted.
const MaxNameLength = 128

// Actor is who performs a change.
type Actor struct {
	Name string
	Kind Kind
}

// SystemActor is the engine's own actor: finalization, reconciliation and any
// library work without an actor in scope.
var SystemActor = Actor{Name: "etl-craft", Kind: System}

// New validates a name and kind and returns the actor.
func New(name string, kind Kind) (Actor, error) {
	if err := CheckName(name, NameVariable); err != nil {
		return Actor{}, err
	}
	if !kind.Valid() {
		return Actor{}, exit.Errorf(exit.Configuration,
			"%s %q is not an actor kind: use one of %s", KindVariable, string(kind), kindList())
	}
	return Actor{Name: name, Kind: kind}, nil
}

// Valid reports whether the kind is one the Engine DB accepts.
func (k Kind) Valid() bool {
	for _, v := range Kinds {
		if k == v {
			return true
		}
	}
	return false
}

// FromEnv resolves the command's actor: the name from ETL_CRAFT_ACTOR, else
// user@hostname; the kind from ETL_CRAFT_ACTOR_KIND, else HUMAN.
func FromEnv() (Actor, error) {
	name, set := os.LookupEnv(NameVariable)
	if !set {
		login := loginName()
		if login == "" {
			return Actor{}, exit.Errorf(exit.Configuration,
				"cannot tell who is acting: no login name; set %s", NameVariable)
		}
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		name = login + "@" + host
	}
	kind := Human
	if v, ok := os.LookupEnv(KindVariable); ok {
		kind = Kind(strings.ToUpper(strings.TrimSpace(v)))
		if !kind.Valid() {
			return Actor{}, exit.Errorf(exit.Configuration,
				"%s=%q is not an actor kind: use one of %s", KindVariable, v, kindList())
		}
	}
	if err := CheckName(name, NameVariable); err != nil {
		return Actor{}, err
	}
	return Actor{Name: name, Kind: kind}, nil
}

// OrchestratorContext returns the remote orchestrator's DAG run id and
// triggering user from the environment, when set.
func OrchestratorContext() map[string]string {
	out := map[string]string{}
	if v := os.Getenv(DAGRunVariable); v != "" {
		out["dag_run_id"] = v
	}
	if v := os.Getenv(TriggeredByVariable); v != "" {
		out["triggered_by"] = v
	}
	return out
}

func loginName() string {
	for _, v := range []string{"USER", "LOGNAME"} {
		if s := os.Getenv(v); s != "" {
			return s
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// CheckName refuses a name the Engine DB cannot record as an actor's: blank,
// not free text (freetext.Check: not UTF-8, or holding a control or format
// character), or longer than MaxNameLength characters. The error (exit 3)
// calls the name label, such as ETL_CRAFT_ACTOR.
func CheckName(name, label string) error {
	if strings.TrimSpace(name) == "" {
		return exit.Errorf(exit.Configuration,
			"%s is blank: set it to a non-empty name of at most %d characters", label, MaxNameLength)
	}
	if err := freetext.Check(name); err != nil {
		return exit.Errorf(exit.Configuration, "%s %v", label, err)
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		return exit.Errorf(exit.Configuration,
			"%s is longer than %d characters", label, MaxNameLength)
	}
	return nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

type ctxKey struct{}

// With returns a context in which the actor acts.
func With(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// From returns the actor in scope, or the SYSTEM actor when none is.
func From(ctx context.Context) Actor {
	if a, ok := ctx.Value(ctxKey{}).(Actor); ok {
		return a
	}
	return SystemActor
}

// String returns "name (KIND)".
func (a Actor) String() string { return fmt.Sprintf("%s (%s)", a.Name, a.Kind) }
