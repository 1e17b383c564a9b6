package actor

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

func TestFromEnvDefaultsAndOverrides(t *testing.T) {
	t.Setenv("USER", "alice")
	t.Setenv(KindVariable, "")
	a, err := FromEnv()
	if err == nil {
		t.Fatalf("an empty kind must be refused, got %v", a)
	}
	t.Setenv(KindVariable, "ORCHESTRATOR")
	t.Setenv(NameVariable, "ci:build-7")
	a, err = FromEnv()
	if err != nil || a.Name != "ci:build-7" || a.Kind != Orchestrator {
		t.Fatalf("got %v, %v", a, err)
	}
}

func TestDefaultNameIsUserAtHost(t *testing.T) {
	t.Setenv("USER", "alice")
	a, err := New("x", Human)
	if err != nil {
		t.Fatal(err)
	}
	_ = a
	t.Setenv(NameVariable, "")
	if _, err := FromEnv(); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), NameVariable) {
		t.Fatalf("blank name: %v", err)
	}
}

func TestInvalidNamesAndKinds(t *testing.T) {
	for _, name := range []string{"", "  ", "a\nb", "nul\x00", "zw\u200bj", strings.Repeat("x", 129)} {
		if _, err := New(name, Human); !exit.Is(err, exit.Configuration) {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := New(strings.Repeat("é", 128), Human); err != nil {
		t.Errorf("128 characters refused: %v", err)
	}
	_, err := New("bob", Kind("ROBOT"))
	if err == nil || !strings.Contains(err.Error(), "HUMAN, SCHEDULE, ORCHESTRATOR, WORKER, SYSTEM") {
		t.Fatalf("unknown kind: %v", err)
	}
}

func TestScopeFallsBackToSystem(t *testing.T) {
	ctx := context.Background()
	if From(ctx) != SystemActor {
		t.Fatal("no actor in scope must be SYSTEM")
	}
	bob := Actor{Name: "bob", Kind: Human}
	if From(With(ctx, bob)) != bob {
		t.Fatal("scoped actor lost")
	}
}
