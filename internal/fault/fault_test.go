package fault

import (
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

func TestPointMatchesOnlyItsName(t *testing.T) {
	cases := []struct {
		value string
		want  bool
	}{
		{"", false},
		{"point", true},
		{"point-two", false},
		{"other", false},
		{"point:unknown", false},
	}
	for _, c := range cases {
		t.Setenv(Variable, c.value)
		err := Point("point")
		if (err != nil) != c.want {
			t.Errorf("%q: got %v, want fault=%v", c.value, err, c.want)
		}
		if err != nil && exit.CodeOf(err) != exit.InjectedFault {
			t.Errorf("%q: code %v, want INJECTED_FAULT", c.value, exit.CodeOf(err))
		}
	}
}
