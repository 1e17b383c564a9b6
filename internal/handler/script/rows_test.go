package script

import (
	"reflect"
	"testing"
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
