package script

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// parseRows reads a batch exactly as encoding/json with UseNumber does.
func FuzzParseRowsMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`[]`, `[[]]`, `[[1,"a",null,true,false,-2.5e3]]`, `[[1,"a\"b\\n\u00e9",{"$t":"timestamp","v":"2024-01-01T00:00:00"}],[2,"é",[1,[2]]]]`,
		` [ [ 1 , "x" ] , [ 2 , "y" ] ] `, `[[1,]`, `[[1`, `[["open]]`, `[[nul]]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseRows([]byte(s))
		var want [][]any
		werr := decodeJSON([]byte(s), &want)
		if werr != nil {
			return // parseRows may read more leniently what is not JSON
		}
		if err != nil {
			t.Fatalf("%q: %v, but encoding/json reads it", s, err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", s, got, want)
		}
	})
}

// copyRows reads COPY text as the PostgreSQL server does: \N is NULL, a
// backslash escape anywhere else is its character, and each field is
// converted for its column.
func TestCopyRows(t *testing.T) {
	target := warehouse.Table{Catalog: "c", Schema: "s", Name: "t"}
	cols := []warehouse.Column{{Name: "i", Type: warehouse.BigInt}, {Name: "s", Type: warehouse.String}, {Name: "b", Type: warehouse.Boolean},
		{Name: "ts", Type: warehouse.Timestamp}}
	got, err := copyRows(target, cols, []byte("1\t\\N\t On \t2024-01-02T03:04:05+02:00\n"+
		"-9223372036854775808\ta\\tb\\nc\\\\d\\N\\b\\f\\v\\101\\x41\\x4g\\q\\.\tno\t\\N\n\\N\t\tyes\t2024-01-02\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 1, 2, 1, 4, 5, 0, time.UTC)
	want := [][]any{{int64(1), nil, true, ts}, {int64(math.MinInt64), "a\tb\nc\\dN\b\f\vAA\x04gq.", false, nil}, {nil, "", true, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)}}
	if len(got) != len(want) {
		t.Fatalf("%d rows: %#v", len(got), got)
	}
	for i := range want {
		for j := range want[i] {
			g, w := got[i][j], want[i][j]
			if gt, ok := g.(time.Time); ok {
				g = gt.UTC()
			}
			if g != w {
				t.Errorf("row %d column %d: %#v, want %#v", i+1, j+1, g, w)
			}
		}
	}
	for text, message := range map[string]string{
		"1\ta\tt\n":           "has 3 values for its 4 columns",
		"1\ta\tt\tx\ty\n":     "has 5 values for its 4 columns",
		"1\ta\tt\t2024-01-02": "ends in the middle of a row",
		"1\ta\tmaybe\t\\N\n":  `column b of the load of c.s.t: "maybe" is not a boolean`,
	} {
		if _, err := copyRows(target, cols, []byte(text)); err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("%q: %v, want %q", text, err, message)
		}
	}
}
