package script

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Values cross the pipe as JSON. Numbers keep their text (json.Number);
// timestamps, dates and decimals come tagged, {"$t": "timestamp", "v":
// ISO text}, from the Python side's encoder, and go back tagged the same way.

// decodeJSON decodes one message keeping numbers exact.
func decodeJSON(b []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(into)
}

// fromWire turns a decoded JSON value into the Go value bound or loaded:
// integers as int64, other numbers as float64 (exact text where asText),
// tagged timestamps and dates as time.Time, tagged decimals as their text,
// lists and objects as JSON text.
func fromWire(v any, asText bool) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, nil
		}
		if asText {
			return string(x), nil
		}
		return strconv.ParseFloat(string(x), 64)
	case map[string]any:
		if tag, ok := x["$t"].(string); ok {
			s, _ := x["v"].(string)
			switch tag {
			case "timestamp", "date":
				return parseTime(s)
			case "decimal":
				return s, nil
			}
		}
		return jsonText(x)
	case []any:
		return jsonText(x)
	}
	return v, nil
}

// jsonText writes a list or an object as JSON text, as the Python side's
// json.dumps writes it into COPY text: keys sorted, <, > and & as they are.
func jsonText(v any) (string, error) {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// timeLayouts are the forms of a timestamp or date text (Python's
// isoformat(), RFC 3339, and the space-separated SQL form).
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02",
}

// parseTime reads a timestamp or date; one without a zone is UTC.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 timestamp or date", s)
}

// toWire turns a value read from the warehouse into JSON: times tagged as
// timestamps (dates when the column is a DATE), exact numbers tagged as
// decimals, bytes as text.
func toWire(v any, typ *sql.ColumnType) any {
	switch x := v.(type) {
	case nil, bool, int64, int32, int16, int8, int, uint64, uint32, uint16, uint8, float64, float32, string:
		return x
	case []byte:
		return string(x)
	case time.Time:
		if strings.EqualFold(typ.DatabaseTypeName(), "DATE") {
			return map[string]string{"$t": "date", "v": x.Format(time.DateOnly)}
		}
		return map[string]string{"$t": "timestamp", "v": x.Format("2006-01-02T15:04:05.999999Z07:00")}
	case *big.Int:
		return json.Number(x.String())
	case fmt.Stringer:
		if strings.Contains(strings.ToUpper(typ.DatabaseTypeName()), "DECIMAL") || strings.Contains(strings.ToUpper(typ.DatabaseTypeName()), "NUMERIC") {
			return map[string]string{"$t": "decimal", "v": x.String()}
		}
		return x.String()
	}
	return fmt.Sprint(v)
}

// portable maps a warehouse's declared column type to the portable type a
// staged column gets; anything else is text.
func portable(typ string) warehouse.Type {
	t := strings.ToUpper(strings.TrimSpace(typ))
	switch {
	case strings.Contains(t, "INT"):
		return warehouse.BigInt
	case strings.HasPrefix(t, "BOOL"):
		return warehouse.Boolean
	case t == "DATE":
		return warehouse.Date
	case strings.HasPrefix(t, "TIMESTAMP"):
		return warehouse.Timestamp
	case strings.HasPrefix(t, "DECIMAL"), strings.HasPrefix(t, "NUMERIC"), t == "DOUBLE", t == "REAL", t == "FLOAT",
		t == "DOUBLE PRECISION":
		return warehouse.Decimal
	}
	return warehouse.String
}

// inferred is the portable type of a column whose first non-NULL value is v.
func inferred(v any) warehouse.Type {
	switch x := v.(type) {
	case bool:
		return warehouse.Boolean
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return warehouse.BigInt
		}
		return warehouse.Decimal
	case map[string]any:
		switch x["$t"] {
		case "timestamp":
			return warehouse.Timestamp
		case "date":
			return warehouse.Date
		case "decimal":
			return warehouse.Decimal
		}
	}
	return warehouse.String
}

// loadValue converts a value of a loaded row for a column of type t: text
// of a CSV file becomes a time or a boolean where the column is one.
func loadValue(v any, t warehouse.Type) (any, error) {
	v, err := fromWire(v, true)
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return v, nil
	}
	switch t {
	case warehouse.Date, warehouse.Timestamp:
		return parseTime(s)
	case warehouse.Boolean:
		return parseBool(s)
	}
	return v, nil
}

// parseBool reads a boolean's text: the words PostgreSQL reads, in any
// case, around spaces.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "t", "1", "yes", "y", "on":
		return true, nil
	case "false", "f", "0", "no", "n", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}
