package warehouse

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
)

// Values a caller hands to BulkLoad are brought to one canonical Go value per
// portable type before any loader sees them:
//
//	Boolean    bool (also from an integer 0 or 1)
//	BigInt     int64 (from any integer, an integral float, or decimal text)
//	Decimal    decimal: exact, at scale DecimalScale (from integers, floats, text, *big.Rat)
//	Date       time.Time at midnight UTC of the value's own calendar day
//	Timestamp  time.Time in UTC, truncated to microseconds
//	String     string (text, bytes, numbers, booleans, times; maps, slices and
//	           json.RawMessage as JSON text)
//
// nil is NULL for every type.

// decimal is an exact number at scale DecimalScale: unscaled × 10^-DecimalScale.
type decimal struct{ unscaled *big.Int }

var decimalFactor = new(big.Int).Exp(big.NewInt(10), big.NewInt(DecimalScale), nil)

// Value binds the number as its text, which every warehouse casts exactly.
func (d decimal) Value() (driver.Value, error) { return d.String(), nil }

// String returns the number with exactly DecimalScale fraction digits.
func (d decimal) String() string {
	q, r := new(big.Int).QuoRem(d.unscaled, decimalFactor, new(big.Int))
	sign := ""
	if d.unscaled.Sign() < 0 {
		sign = "-"
		q.Abs(q)
		r.Abs(r)
	}
	frac := r.String()
	for len(frac) < DecimalScale {
		frac = "0" + frac
	}
	return sign + q.String() + "." + frac
}

// newDecimal rounds r half away from zero to DecimalScale digits.
func newDecimal(r *big.Rat) decimal {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(decimalFactor))
	q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(scaled.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(scaled.Num().Sign())))
	}
	return decimal{unscaled: q}
}

// canonical converts v to the canonical value of type t (see above).
func canonical(t Type, v any) (any, error) {
	if v == nil || isCanonical(t, v) {
		return v, nil
	}
	switch t {
	case Boolean:
		return toBool(v)
	case BigInt:
		return toInt64(v)
	case Decimal:
		return toDecimal(v)
	case Date:
		tm, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("cannot store %T as a DATE: expected a time.Time", v)
		}
		y, m, d := tm.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
	case Timestamp:
		tm, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("cannot store %T as a TIMESTAMP: expected a time.Time", v)
		}
		return tm.UTC().Truncate(time.Microsecond), nil
	case String:
		return toText(v)
	}
	return nil, fmt.Errorf("unknown column type %s", t)
}

// isCanonical reports whether v already is the canonical value of type t,
// which canonical then returns as it is rather than boxing it again: a bulk
// load converts millions of values.
func isCanonical(t Type, v any) bool {
	switch x := v.(type) {
	case int64:
		return t == BigInt
	case string:
		return t == String
	case bool:
		return t == Boolean
	case time.Time:
		return t == Timestamp && x.Location() == time.UTC && x.Nanosecond()%1000 == 0 && x == x.Round(0)
	}
	return false
}

func toBool(v any) (any, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	n, err := toInt64(v)
	if err != nil || (n != 0 && n != 1) {
		return nil, fmt.Errorf("cannot store %v (%T) as a BOOLEAN", v, v)
	}
	return n == 1, nil
}

func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), nil
		}
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n, nil
		}
	case []byte:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("cannot store %v (%T) as a BIGINT", v, v)
}

func toDecimal(v any) (any, error) {
	r := new(big.Rat)
	switch x := v.(type) {
	case *big.Rat:
		r.Set(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("cannot store %v as a DECIMAL", x)
		}
		r.SetFloat64(x)
	case float32:
		return toDecimal(float64(x))
	case string:
		if _, ok := r.SetString(x); !ok {
			return nil, fmt.Errorf("cannot store %q as a DECIMAL", x)
		}
	case []byte:
		return toDecimal(string(x))
	default:
		n, err := toInt64(v)
		if err != nil {
			return nil, fmt.Errorf("cannot store %v (%T) as a DECIMAL", v, v)
		}
		r.SetInt64(n)
	}
	d := newDecimal(r)
	if len(new(big.Int).Abs(d.unscaled).String()) > 38 {
		return nil, fmt.Errorf("%v does not fit DECIMAL(38, %d)", v, DecimalScale)
	}
	return d, nil
}

func toText(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case json.RawMessage:
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	if n, err := toInt64(v); err == nil {
		return strconv.FormatInt(n, 10), nil
	}
	return nil, fmt.Errorf("cannot store %T as text", v)
}

// canonicalRow appends the canonical values of row, one per column, to dst
// and returns it; the caller's row is never changed.
func canonicalRow(dst []any, cols []Column, row []any) ([]any, error) {
	if len(row) != len(cols) {
		return dst, fmt.Errorf("a row has %d values for %d columns", len(row), len(cols))
	}
	for i, c := range cols {
		v, err := canonical(c.Type, row[i])
		if err != nil {
			return dst, fmt.Errorf("column %s: %w", c.Name, err)
		}
		dst = append(dst, v)
	}
	return dst, nil
}
