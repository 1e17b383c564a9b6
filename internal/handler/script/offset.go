package script

import (
	"context"
	"math/big"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
)

// FaultAfterOffset is the fault point after a script's offset is written,
// inside the transaction that records the attempt SUCCESS.
const FaultAfterOffset = "script.after_offset"

// The offset datatypes of AUD_TASK_OFFSET_TRACKER.
const (
	offsetNumber    = "NUMBER"
	offsetText      = "TEXT"
	offsetTimestamp = "TIMESTAMP"
)

// offset is a task's watermark as AUD_TASK_OFFSET_TRACKER keeps it: its
// value's text and its datatype.
type offset struct {
	Value    string `json:"value"`
	Datatype string `json:"datatype"`
}

// String is the offset as TASK_LOG shows it: "<DATATYPE> <value>".
func (o offset) String() string { return o.Datatype + " " + o.Value }

// check refuses an offset whose datatype is unknown or whose value is not
// of it: a NUMBER is a decimal number, a TIMESTAMP an ISO 8601 timestamp of
// at most microsecond precision.
func (o offset) check() error {
	switch o.Datatype {
	case offsetText:
		return nil
	case offsetNumber:
		if _, ok := new(big.Rat).SetString(strings.TrimSpace(o.Value)); !ok {
			return exit.Errorf(exit.Handler, "the script returned the NUMBER offset %q, which is not a number", o.Value)
		}
		return nil
	case offsetTimestamp:
		if _, err := parseTime(o.Value); err != nil {
			return exit.Errorf(exit.Handler, "the script returned the TIMESTAMP offset %q, which is not an ISO 8601 timestamp", o.Value)
		}
		if frac := fraction(o.Value); len(frac) > 6 {
			return exit.Errorf(exit.Handler, "the script returned the TIMESTAMP offset %q with nanoseconds: offsets are kept to the microsecond", o.Value)
		}
		return nil
	}
	return exit.Errorf(exit.Handler, "the script returned an offset of datatype %q: use NUMBER, TEXT or TIMESTAMP", o.Datatype)
}

// fraction returns the fraction digits of a timestamp's seconds.
func fraction(ts string) string {
	i := strings.IndexByte(ts, '.')
	if i < 0 {
		return ""
	}
	j := i + 1
	for j < len(ts) && ts[j] >= '0' && ts[j] <= '9' {
		j++
	}
	return ts[i+1 : j]
}

// readOffset returns a task's stored offset, nil when it has none.
func readOffset(ctx context.Context, q engine.Querier, taskID int64) (*offset, error) {
	var o offset
	var value *string
	err := q.QueryRowContext(ctx, "SELECT OFFSET_TYPE, OFFSET_VALUE FROM AUD_TASK_OFFSET_TRACKER WHERE TASK_ID = $1", taskID).
		Scan(&o.Datatype, &value)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the offset of task_id=%d from AUD_TASK_OFFSET_TRACKER", taskID)
	}
	if value != nil {
		o.Value = *value
	}
	return &o, nil
}

// StoredOffset returns a task's offset as AUD_TASK_OFFSET_TRACKER keeps it,
// in TASK_LOG's form "<DATATYPE> <value>" (such as "TEXT 2026-01-07"); ""
// when the task has none.
func StoredOffset(ctx context.Context, q engine.Querier, taskID int64) (string, error) {
	o, err := readOffset(ctx, q, taskID)
	if o == nil || err != nil {
		return "", err
	}
	return o.String(), nil
}

// sameType refuses an offset whose datatype differs from the stored one.
func sameType(stored *offset, o offset, taskCode string) error {
	if stored != nil && stored.Datatype != o.Datatype {
		return exit.Errorf(exit.Handler,
			"the script of %s returned a %s offset, but the task's stored offset is %s: return Offset(…, %q), or delete the task's AUD_TASK_OFFSET_TRACKER row to start over",
			taskCode, o.Datatype, stored.Datatype, stored.Datatype)
	}
	return nil
}

// writeOffset stores a task's new offset in tx, the transaction recording
// its attempt SUCCESS; a datatype that differs from the stored one is
// refused.
func writeOffset(ctx context.Context, tx *engine.Tx, taskID int64, taskCode string, o offset) error {
	stored, err := readOffset(ctx, tx, taskID)
	if err != nil {
		return err
	}
	if err := sameType(stored, o, taskCode); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO AUD_TASK_OFFSET_TRACKER (TASK_ID, OFFSET_TYPE, OFFSET_VALUE, LAST_UPDATED_TIMESTAMP)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (TASK_ID) DO UPDATE SET OFFSET_TYPE = excluded.OFFSET_TYPE, OFFSET_VALUE = excluded.OFFSET_VALUE,
			LAST_UPDATED_TIMESTAMP = excluded.LAST_UPDATED_TIMESTAMP`,
		taskID, o.Datatype, o.Value, tx.TimeArg(time.Now()))
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not write the offset of %s to AUD_TASK_OFFSET_TRACKER", taskCode)
	}
	return fault.Point(FaultAfterOffset)
}
