package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/freetext"
)

// A request body is decoded strictly, so that what is validated is what is
// decoded: huma validates a body's keys exactly as the schema spells them
// (huma.ValidateStrictCasing, set in init), where encoding/json would match
// a key in any letter case and keep the last of two. So a key in another
// case than the schema's is an unexpected property (422), and a body one of
// whose objects names a key twice, in any case, is malformed (400,
// strictJSON): both are refused before huma reads a value, and so before
// anything is recorded.

// strictJSON is the API's JSON format: huma's own encoding, and a decoding
// that refuses duplicate keys.
var strictJSON = huma.Format{Marshal: huma.DefaultJSONFormat.Marshal, Unmarshal: decodeStrict}

// decodeStrict refuses data whose objects repeat a key, then decodes it
// into v.
func decodeStrict(data []byte, v any) error {
	if err := refuseDuplicateKeys(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// errMalformed stops the duplicate-key check of a document that is not
// JSON, which the decoder then refuses in its own words.
var errMalformed = errors.New("not JSON")

// refuseDuplicateKeys returns an error naming the first key that an object
// of the JSON document data names twice, comparing keys in any letter case.
func refuseDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := uniqueKeys(dec); err != nil && !errors.Is(err, errMalformed) {
		return err
	}
	return nil
}

// uniqueKeys reads one value from dec, checking the keys of every object
// in it.
func uniqueKeys(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return errMalformed
	}
	open, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	keys := map[string]string{}
	for dec.More() {
		if open == '{' {
			tok, err := dec.Token()
			key, isKey := tok.(string)
			if err != nil || !isKey {
				return errMalformed
			}
			if first, seen := keys[fold(key)]; seen {
				if first == key {
					return fmt.Errorf("the key %q appears twice in one object: name each field once", key)
				}
				return fmt.Errorf("the keys %q and %q name one field (keys are compared in any letter case): name each field once, as the schema spells it",
					first, key)
			}
			keys[fold(key)] = key
		}
		if err := uniqueKeys(dec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return errMalformed
	}
	return nil
}

// fold returns the form of a key that every letter-case variant of it
// shares: each rune replaced by the smallest rune of its case-folding
// orbit, so that keys fold alike exactly when strings.EqualFold holds.
func fold(key string) string {
	r := []rune(key)
	for i, c := range r {
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			r[i] = min(r[i], f)
		}
	}
	return string(r)
}

// checkFreeText refuses a request whose path, query or body holds text that
// is not free text (freetext.Check: a control or format character, or not
// UTF-8), with a usage error (400) naming the first such field, before
// the handler reads or records anything: the same rule as the command
// line's flags.
func checkFreeText(in any) error {
	var bad error
	visitText(reflect.ValueOf(in), "", func(name, value string) {
		if bad == nil {
			if err := freetext.Check(value); err != nil {
				bad = newError(http.StatusBadRequest, exit.Usage.Class(), exit.Usage, name+" "+err.Error(), name)
			}
		}
	})
	return bad
}

// visitText calls visit with every string of v, a request input or a part
// of one, named by its field's path, query or JSON name.
func visitText(v reflect.Value, name string, visit func(name, value string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			visitText(v.Elem(), name, visit)
		}
	case reflect.String:
		visit(name, v.String())
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			visitText(v.Index(i), name, visit)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			visitText(it.Value(), name, visit)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			visitText(v.Field(i), inputName(f, name), visit)
		}
	}
}

// inputName is how the API names a field of a request input: its path,
// query or JSON name; the name of the part it is in for the body itself.
func inputName(f reflect.StructField, outer string) string {
	for _, tag := range []string{"path", "query", "header", "json"} {
		if n, _, _ := strings.Cut(f.Tag.Get(tag), ","); n != "" && n != "-" {
			return n
		}
	}
	return outer
}
