package api

import (
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// nullablePointers makes every property of a document whose Go field is a
// pointer accept null, as the documents write a nil pointer: huma marks
// pointers to scalars nullable itself, but not a pointer to a document
// (a $ref) nor an aliased type such as report.Instant.
func nullablePointers(reg huma.Registry) {
	for name, s := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		if t == nil || t.Kind() != reflect.Struct {
			continue
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Type.Kind() != reflect.Pointer {
				continue
			}
			jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if jsonName == "" || jsonName == "-" {
				continue
			}
			prop := s.Properties[jsonName]
			switch {
			case prop == nil || prop.Nullable:
			case prop.Ref != "":
				s.Properties[jsonName] = &huma.Schema{Description: prop.Description,
					AnyOf: []*huma.Schema{{Ref: prop.Ref}, {Type: "null"}}}
			default:
				prop.Nullable = true
			}
		}
	}
}
