package engine

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// Reading rows natively on PostgreSQL: the connection's own pgx connection
// runs the query with its results in binary form, and each row's raw values
// are decoded straight into plain values (int64, bool, string, time.Time in
// UTC), with neither database/sql's nor the driver's conversions between. A
// type outside those decoded here (numeric, json, a domain) arrives as its
// text.

// binaryOIDs are the result types other than text read in binary form,
// each with its decoder into the value a bulk load takes.
var binaryOIDs = map[uint32]func(v []byte) (any, error){
	pgtype.BoolOID:        func(v []byte) (any, error) { return v[0] != 0, nil },
	pgtype.Int2OID:        func(v []byte) (any, error) { return int64(int16(binary.BigEndian.Uint16(v))), nil },
	pgtype.Int4OID:        func(v []byte) (any, error) { return int64(int32(binary.BigEndian.Uint32(v))), nil },
	pgtype.Int8OID:        func(v []byte) (any, error) { return int64(binary.BigEndian.Uint64(v)), nil },
	pgtype.TimestamptzOID: pgTimestamp,
	pgtype.TimestampOID:   pgTimestamp,
	pgtype.DateOID:        pgDate,
}

// resultFormats asks for the types of binaryOIDs, and text, in binary
// form (text's is its UTF-8 bytes, as in text form), any other as text.
var resultFormats = func() pgx.QueryResultFormatsByOID {
	m := pgx.QueryResultFormatsByOID{pgtype.TextOID: pgx.BinaryFormatCode, pgtype.VarcharOID: pgx.BinaryFormatCode}
	for oid := range binaryOIDs {
		m[oid] = pgx.BinaryFormatCode
	}
	return m
}()

// pgEpoch is the day PostgreSQL counts binary timestamps and dates from, in
// seconds since 1970.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// ErrInfiniteTime is the error of reading an infinite timestamp or date.
var ErrInfiniteTime = errors.New("an infinite time cannot be mirrored")

// pgTimestamp decodes a binary timestamp, with or without time zone:
// microseconds since 2000-01-01 UTC.
func pgTimestamp(v []byte) (any, error) {
	us := int64(binary.BigEndian.Uint64(v))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return nil, ErrInfiniteTime
	}
	sec, frac := us/1_000_000, us%1_000_000
	return time.Unix(pgEpoch+sec, frac*1000).UTC(), nil
}

// pgDate decodes a binary date, days since 2000-01-01, as midnight UTC.
func pgDate(v []byte) (any, error) {
	days := int32(binary.BigEndian.Uint32(v))
	if days == math.MaxInt32 || days == math.MinInt32 {
		return nil, ErrInfiniteTime
	}
	return time.Date(2000, 1, 1+int(days), 0, 0, 0, 0, time.UTC), nil
}

// pgRows reads the rows of one query through pgx (see readRows).
type pgRows struct {
	rows    pgx.Rows
	decode  []func(v []byte) (any, error)
	release func()
}

// readRows runs q on conn's pgx connection, in the transaction conn holds.
// The connection is the reader's alone until it is closed.
func (postgresDialect) readRows(ctx context.Context, conn *sql.Conn, q string, args ...any) (RowReader, error) {
	pc, release, err := lendPGX(conn)
	if err != nil {
		return nil, err
	}
	rows, err := pc.Query(ctx, q, append([]any{resultFormats}, args...)...)
	if err != nil {
		release()
		return nil, err
	}
	r := &pgRows{rows: rows, release: release}
	for _, f := range rows.FieldDescriptions() {
		name := f.Name
		decode := binaryOIDs[f.DataTypeOID]
		if decode == nil || f.Format != pgx.BinaryFormatCode {
			decode = (&texts{seen: map[string]any{}}).value
		}
		r.decode = append(r.decode, func(v []byte) (any, error) {
			x, err := decode(v)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", name, err)
			}
			return x, nil
		})
	}
	return r, nil
}

// Text values repeat: an Engine DB's actors, hosts, commands, outcomes,
// statuses. A text column's reader keeps the values it has met, up to
// textsKept of at most textKept bytes each, and hands a value met again
// as the one it kept, allocating nothing.
const (
	textsKept = 1024
	textKept  = 128
)

// texts is the kept values of one text column.
type texts struct{ seen map[string]any }

func (t *texts) value(v []byte) (any, error) {
	if len(v) > textKept {
		return string(v), nil
	}
	if x, ok := t.seen[string(v)]; ok {
		return x, nil
	}
	var x any = string(v)
	if len(t.seen) < textsKept {
		t.seen[x.(string)] = x
	}
	return x, nil
}

func (r *pgRows) Next(row []any) (bool, error) {
	if !r.rows.Next() {
		return false, r.rows.Err()
	}
	for i, v := range r.rows.RawValues() {
		if v == nil {
			row[i] = nil
			continue
		}
		x, err := r.decode[i](v)
		if err != nil {
			return false, err
		}
		row[i] = x
	}
	return true, nil
}

func (r *pgRows) Close() {
	if r.release != nil {
		r.rows.Close()
		r.release()
		r.release = nil
	}
}

// lendPGX lends the pgx connection under conn until release is called:
// conn.Raw runs on a goroutine of its own, and returns once released, so the
// driver connection is used only while Raw holds it.
func lendPGX(conn *sql.Conn) (pc *pgx.Conn, release func(), err error) {
	lent := make(chan *pgx.Conn)
	done := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		ended <- conn.Raw(func(dc any) error {
			sc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("the PostgreSQL driver connection is a %T", dc)
			}
			lent <- sc.Conn()
			<-done
			return nil
		})
	}()
	select {
	case pc := <-lent:
		return pc, func() { close(done); <-ended }, nil
	case err := <-ended:
		return nil, nil, err
	}
}
