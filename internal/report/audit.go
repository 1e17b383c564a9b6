package report

import (
	"encoding/json"
)

// Action is one recorded command request (an AUD_ACTIONS row).
type Action struct {
	Schema        string  `json:"schema"`
	ActionID      int64   `json:"action_id"`
	PipelineID    *int64  `json:"pipeline_id"`
	PipelineRunID *int64  `json:"pipeline_run_id"`
	TaskID        *int64  `json:"task_id"`
	At            Instant `json:"at"`
	Actor         string  `json:"actor"`
	Kind          string  `json:"kind"`
	Host          string  `json:"host"`
	Command       string  `json:"command"`
	Outcome       string  `json:"outcome"`
	// Arguments are the command's arguments as recorded, sensitive values
	// masked, as compact JSON.
	Arguments json.RawMessage `json:"arguments"`
}

// MetadataChange is one captured CFG_ row change (an AUD_METADATA_CHANGES row).
type MetadataChange struct {
	Schema    string  `json:"schema"`
	ChangeID  int64   `json:"change_id"`
	At        Instant `json:"at"`
	Actor     string  `json:"actor"`
	Kind      string  `json:"kind"`
	TableName string  `json:"table_name"`
	RowKey    string  `json:"row_key"`
	Operation string  `json:"operation"`
	// Before and After are the row's images as compact JSON objects keyed
	// by lower-case column name; nil for an insert's before or a delete's after.
	Before json.RawMessage `json:"before_json"`
	After  json.RawMessage `json:"after_json"`
	// Migration is the PROJECT migration file that made the change, if any.
	Migration *string `json:"migration"`
}

// Audit is the command requests and metadata changes, in the order they
// were recorded.
type Audit struct {
	Schema  string           `json:"schema"`
	Actions []Action         `json:"actions"`
	Changes []MetadataChange `json:"changes"`
}
