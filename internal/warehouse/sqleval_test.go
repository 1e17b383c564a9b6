package warehouse

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// No live Trino, Databricks or Snowflake can be reached from here, so the
// change-hash test evaluates the expressions their dialects generate with
// this small interpreter: it reads exactly the SQL the hash is built from
// (CASE, IS NULL, ||, CAST, AT TIME ZONE, string literals in the dialect's
// escaping, quoted column names) and gives each function the behaviour its
// platform documents:
//
//   - Trino: CAST(decimal AS VARCHAR) is plain at the declared scale;
//     CAST(timestamp(6) AS VARCHAR) is "YYYY-MM-DD HH:MM:SS.ffffff";
//     x AT TIME ZONE 'UTC' keeps the instant in UTC and CAST to a timestamp
//     keeps its wall clock; replace, length, to_utf8, md5 (of varbinary),
//     to_hex (upper case) and lower.
//   - Databricks: CAST(decimal AS STRING) is Java's BigDecimal.toString
//     when spark.sql.ansi.enabled is false (0E-10 for a zero
//     DECIMAL(38, 10)), which is why the dialect does not use it;
//     format_number groups with commas at the given scale; date_format with
//     Java patterns; a TIMESTAMP is an instant shown in the session time
//     zone (current_timezone()), CAST to TIMESTAMP_NTZ keeps that wall
//     clock, convert_timezone(from, to, ntz) moves a wall clock; md5 is
//     lower-case hex.
//   - Snowflake: TO_VARCHAR(date or timestamp, format) with YYYY, MM, DD,
//     HH24, MI, SS, FF6 and "quoted" text; a TIMESTAMP_TZ keeps its
//     offset and CONVERT_TIMEZONE('UTC', x) moves it to UTC; CAST(NUMBER(p,
//     s) AS VARCHAR) is plain at the scale; MD5 is lower-case hex.
//
// What cannot be evaluated so is each platform's parser and planner: the
// golden files pin the statements, reviewed against each grammar.

// sqlKind is the kind of a value the interpreter holds.
type sqlKind int

const (
	vNull sqlKind = iota
	vText
	vBinary
	vInt
	vDecimal // unscaled with a scale
	vBool
	vDate
	vWall    // a timestamp without time zone
	vInstant // Databricks TIMESTAMP: shown in the session time zone
	vZoned   // a timestamp with its zone (Trino, Snowflake)
)

// sqlValue is one value; a decimal is unscaled × 10^-scale.
type sqlValue struct {
	kind  sqlKind
	text  string
	bin   []byte
	num   *big.Int
	scale int
	b     bool
	t     time.Time
}

// evaluator evaluates generated SQL expressions of one dialect.
type evaluator struct {
	dialect string // trino, databricks, snowflake
	quote   byte
	columns map[string]sqlValue
	session *time.Location // Databricks' session time zone
	src     string
	pos     int
	skip    int // > 0 while reading a CASE branch not taken: parsed, not evaluated
}

func (e *evaluator) eval(src string) (v sqlValue, err error) {
	e.src, e.pos = src, 0
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v at %d of %s", r, e.pos, src)
		}
	}()
	v = e.concat()
	e.space()
	if e.pos != len(e.src) {
		panic("trailing text " + e.src[e.pos:])
	}
	return v, nil
}

func (e *evaluator) space() {
	for e.pos < len(e.src) && e.src[e.pos] == ' ' {
		e.pos++
	}
}

// word consumes a case-insensitive keyword when it comes next.
func (e *evaluator) word(w string) bool {
	e.space()
	if len(e.src)-e.pos >= len(w) && strings.EqualFold(e.src[e.pos:e.pos+len(w)], w) {
		end := e.pos + len(w)
		if end == len(e.src) || !isIdent(e.src[end]) || !isIdent(w[len(w)-1]) {
			e.pos = end
			return true
		}
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (e *evaluator) expect(w string) {
	if !e.word(w) {
		panic("expected " + w)
	}
}

// concat is a || b || …
func (e *evaluator) concat() sqlValue {
	v := e.postfix()
	for e.word("||") {
		r := e.postfix()
		if e.skip > 0 {
			continue
		}
		v = sqlValue{kind: vText, text: textOf(v) + textOf(r)}
	}
	return v
}

// postfix is a primary with IS NULL or AT TIME ZONE after it.
func (e *evaluator) postfix() sqlValue {
	v := e.primary()
	for {
		switch {
		case e.word("IS NULL"):
			v = sqlValue{kind: vBool, b: v.kind == vNull}
		case e.word("AT TIME ZONE"):
			zone := textOf(e.primary())
			if e.skip > 0 {
				continue
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				panic(err)
			}
			v = sqlValue{kind: vZoned, t: v.t.In(loc)}
		default:
			return v
		}
	}
}

func (e *evaluator) primary() sqlValue {
	e.space()
	c := e.src[e.pos]
	switch {
	case c == '\'':
		return sqlValue{kind: vText, text: e.literal()}
	case c == e.quote:
		end := strings.IndexByte(e.src[e.pos+1:], e.quote)
		name := e.src[e.pos+1 : e.pos+1+end]
		e.pos += end + 2
		v, ok := e.columns[name]
		if !ok {
			panic("no column " + name)
		}
		return v
	case c >= '0' && c <= '9':
		start := e.pos
		for e.pos < len(e.src) && e.src[e.pos] >= '0' && e.src[e.pos] <= '9' {
			e.pos++
		}
		n, _ := new(big.Int).SetString(e.src[start:e.pos], 10)
		return sqlValue{kind: vInt, num: n}
	case e.word("CASE"):
		e.expect("WHEN")
		cond := e.concat()
		taken := e.skip == 0 && cond.kind == vBool && cond.b
		e.expect("THEN")
		a := e.branch(!taken)
		e.expect("ELSE")
		b := e.branch(taken)
		e.expect("END")
		if taken {
			return a
		}
		return b
	case e.word("CAST"):
		e.expect("(")
		v := e.concat()
		e.expect("AS")
		start := e.pos
		depth := 0
		for depth > 0 || e.src[e.pos] != ')' {
			switch e.src[e.pos] {
			case '(':
				depth++
			case ')':
				depth--
			}
			e.pos++
		}
		typ := strings.TrimSpace(e.src[start:e.pos])
		e.expect(")")
		if e.skip > 0 {
			return sqlValue{}
		}
		return e.cast(v, typ)
	}
	start := e.pos
	for e.pos < len(e.src) && isIdent(e.src[e.pos]) {
		e.pos++
	}
	name := strings.ToLower(e.src[start:e.pos])
	e.expect("(")
	var args []sqlValue
	if !e.word(")") {
		for {
			args = append(args, e.concat())
			if e.word(")") {
				break
			}
			e.expect(",")
		}
	}
	if e.skip > 0 {
		return sqlValue{}
	}
	return e.call(name, args)
}

// branch reads a CASE branch, evaluating it unless skipped.
func (e *evaluator) branch(skipped bool) sqlValue {
	if skipped {
		e.skip++
		defer func() { e.skip-- }()
	}
	return e.concat()
}

// literal reads a string literal: quotes doubled, and on Databricks a
// backslash escaping the next character.
func (e *evaluator) literal() string {
	var b strings.Builder
	e.pos++
	for {
		c := e.src[e.pos]
		switch {
		case c == '\\' && e.dialect == "databricks":
			b.WriteByte(e.src[e.pos+1])
			e.pos += 2
		case c == '\'' && e.pos+1 < len(e.src) && e.src[e.pos+1] == '\'':
			b.WriteByte('\'')
			e.pos += 2
		case c == '\'':
			e.pos++
			return b.String()
		default:
			b.WriteByte(c)
			e.pos++
		}
	}
}

// textOf is a value as text, for || and function arguments.
func textOf(v sqlValue) string {
	if v.kind != vText {
		panic(fmt.Sprintf("a %d where text is needed", v.kind))
	}
	return v.text
}

func (e *evaluator) cast(v sqlValue, typ string) sqlValue {
	t := strings.ToUpper(typ)
	switch {
	case t == "VARCHAR" || t == "STRING":
		switch v.kind {
		case vText:
			return v
		case vInt:
			return sqlValue{kind: vText, text: v.num.String()}
		case vDecimal:
			if e.dialect == "databricks" {
				return sqlValue{kind: vText, text: javaBigDecimal(v.num, v.scale)}
			}
			return sqlValue{kind: vText, text: plainDecimal(v.num, v.scale)}
		case vDate:
			return sqlValue{kind: vText, text: v.t.Format("2006-01-02")}
		case vWall:
			return sqlValue{kind: vText, text: v.t.Format("2006-01-02 15:04:05.000000")}
		}
	case t == "TIMESTAMP(6)" && (v.kind == vWall || v.kind == vZoned):
		w := v.t
		return sqlValue{kind: vWall, t: time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)}
	case t == "TIMESTAMP_NTZ" && v.kind == vInstant:
		w := v.t.In(e.session)
		return sqlValue{kind: vWall, t: time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)}
	}
	panic(fmt.Sprintf("CAST of a %d AS %s is not modelled", v.kind, typ))
}

func (e *evaluator) call(name string, args []sqlValue) sqlValue {
	text := func(s string) sqlValue { return sqlValue{kind: vText, text: s} }
	switch name {
	case "replace":
		return text(strings.ReplaceAll(textOf(args[0]), textOf(args[1]), textOf(args[2])))
	case "length":
		return sqlValue{kind: vInt, num: big.NewInt(int64(utf8.RuneCountInString(textOf(args[0]))))}
	case "lower":
		return text(strings.ToLower(textOf(args[0])))
	case "to_utf8":
		return sqlValue{kind: vBinary, bin: []byte(textOf(args[0]))}
	case "to_hex":
		return text(strings.ToUpper(hex.EncodeToString(args[0].bin)))
	case "md5":
		if args[0].kind == vBinary { // Trino: varbinary to varbinary
			sum := md5.Sum(args[0].bin)
			return sqlValue{kind: vBinary, bin: sum[:]}
		}
		sum := md5.Sum([]byte(textOf(args[0])))
		return text(hex.EncodeToString(sum[:]))
	case "format_number":
		return text(groupDigits(plainDecimal(args[0].num, args[0].scale)))
	case "current_timezone":
		return text(e.session.String())
	case "convert_timezone":
		if len(args) == 2 { // Snowflake: to a zone
			loc, _ := time.LoadLocation(textOf(args[0]))
			return sqlValue{kind: vZoned, t: args[1].t.In(loc)}
		}
		from, _ := time.LoadLocation(textOf(args[0]))
		to, _ := time.LoadLocation(textOf(args[1]))
		w := args[2].t
		at := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), from).In(to)
		return sqlValue{kind: vWall, t: time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), time.UTC)}
	case "date_format":
		t := args[0].t
		if args[0].kind == vInstant {
			t = t.In(e.session)
		}
		return text(t.Format(javaLayout(textOf(args[1]))))
	case "to_varchar":
		return text(args[0].t.Format(snowflakeLayout(textOf(args[1]))))
	}
	panic("function " + name + " is not modelled")
}

// plainDecimal writes unscaled × 10^-scale with exactly scale decimals.
func plainDecimal(n *big.Int, scale int) string {
	s := new(big.Int).Abs(n).String()
	for len(s) <= scale {
		s = "0" + s
	}
	if scale > 0 {
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// javaBigDecimal is java.math.BigDecimal.toString: scientific notation
// when the scale is positive and the adjusted exponent is below -6.
func javaBigDecimal(n *big.Int, scale int) string {
	digits := new(big.Int).Abs(n).String()
	adjusted := len(digits) - 1 - scale
	if scale <= 0 || adjusted >= -6 {
		return plainDecimal(n, scale)
	}
	s := digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	s += "E" + strconv.Itoa(adjusted)
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// groupDigits puts Java DecimalFormat's grouping commas in a plain number.
func groupDigits(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}

// javaLayout turns the Java date patterns the dialect uses into Go's.
func javaLayout(p string) string {
	return strings.NewReplacer("yyyy", "2006", "MM", "01", "dd", "02", "HH", "15", "mm", "04", "ss", "05",
		"SSSSSS", "000000", "'T'", "T").Replace(p)
}

// snowflakeLayout turns the Snowflake formats the dialect uses into Go's.
func snowflakeLayout(p string) string {
	return strings.NewReplacer("YYYY", "2006", "MM", "01", "DD", "02", "HH24", "15", "MI", "04", "SS", "05",
		"FF6", "000000", `"T"`, "T").Replace(p)
}
