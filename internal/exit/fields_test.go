package exit

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldErrorsNameRequestFieldsThatEachFrontEndWritesItsWay(t *testing.T) {
	err := Fieldf(Usage, "{stale} marks a task whose process is gone: name it with {task} (got %q)", "{x}")
	var fe *FieldError
	if !errors.As(err, &fe) || CodeOf(err) != Usage || len(fe.Fields) != 2 || fe.Fields[0] != "stale" || fe.Fields[1] != "task" {
		t.Fatalf("%#v", err)
	}
	if got := err.Error(); got != `stale marks a task whose process is gone: name it with task (got "{x}")` {
		t.Errorf("bare field names: %s", got)
	}
	wrapped := fmt.Errorf("mark: %w", err)
	if got := Flagged(wrapped); got != `mark: --stale marks a task whose process is gone: name it with --task_code (got "{x}")` {
		t.Errorf("as flags: %s", got)
	}
	if got := Text(wrapped); got != `mark: {stale} marks a task whose process is gone: name it with {task} (got "{x}")` {
		t.Errorf("kept as fields: %s", got)
	}
	plain := Errorf(RunState, "no fields {here}")
	if Flagged(plain) != "no fields {here}" || Text(plain) != "no fields {here}" {
		t.Errorf("an error without fields is written as it is: %s / %s", Flagged(plain), Text(plain))
	}
	for field, flag := range map[string]string{"pipeline": "--pipeline_code", "task": "--task_code", "run_date": "--run-date",
		"ignore_dependencies": "--ignore-dependencies", "reason": "--reason"} {
		if Flag(field) != flag {
			t.Errorf("Flag(%s) = %s, want %s", field, Flag(field), flag)
		}
	}
	if got := Flags("etl-craft run {pipeline} P {backfill} A:B {reason} ... {unknown}"); got != "etl-craft run --pipeline_code P --backfill A:B --reason ... {unknown}" {
		t.Errorf("a text: %s", got)
	}
}
