package report

// Runs is one page of a pipeline's runs, newest first.
type Runs struct {
	Schema       string `json:"schema"`
	PipelineID   int64  `json:"pipeline_id"`
	PipelineCode string `json:"pipeline_code"`
	Runs         []Run  `json:"runs"`
	// NextBefore is the cursor of the next page (the last run's id, to pass
	// as before); null on the last page.
	NextBefore *int64 `json:"next_before"`
}

// AttemptLog is a part of an attempt's log file, from a byte offset.
type AttemptLog struct {
	Schema    string `json:"schema"`
	AttemptID int64  `json:"attempt_id"`
	LogPath   string `json:"log_path"`
	// Offset is where Text starts; Size the file's length when it was read.
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
	// NextOffset is where the next read goes on (Offset plus the bytes of
	// Text); Truncated is set when the log went on past what was returned.
	NextOffset int64  `json:"next_offset"`
	Truncated  bool   `json:"truncated"`
	Text       string `json:"text"`
}

// Health says that the Engine DB answers and who asked.
type Health struct {
	Schema string `json:"schema"`
	Status string `json:"status"`
	// EngineDB is the Engine DB's dialect: sqlite or postgres.
	EngineDB string `json:"engine_db"`
	// Actor and Role are the presented token's name and role.
	Actor string `json:"actor"`
	Role  string `json:"role"`
}

// Error is a refused or failed HTTP API request. Status is the HTTP status;
// ErrorClass and ExitCode are what the command line would have said (the
// error class and exit code of the reference's table), Message why, and
// Field the request field at fault, when one is.
type Error struct {
	Schema     string  `json:"schema"`
	Status     int     `json:"status"`
	ErrorClass string  `json:"error_class"`
	ExitCode   int     `json:"exit_code"`
	Message    string  `json:"message"`
	Field      *string `json:"field"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// GetStatus returns the HTTP status, for the API's error writer.
func (e *Error) GetStatus() int { return e.Status }
