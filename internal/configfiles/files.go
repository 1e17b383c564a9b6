// Package configfiles keeps pipeline metadata as six CSV files that a team
// reviews and diffs: Export writes the CFG_ tables' rows as the files, and
// Sync merges the files back by key in one Engine DB transaction (insert,
// update, reactivate, retire), running validate inside it, then commits
// (apply) or rolls back (plan). Every change is captured in
// AUD_METADATA_CHANGES with the configuration revision, a hash of the files,
// where a PROJECT migration records its file name.
package configfiles

// file is one of the six CSV files: the table it holds, its merge key and
// its value columns. Key columns that name a pipeline or a task are codes;
// refs says which table columns they resolve to.
type file struct {
	name  string
	table string
	id    string
	// key are the CSV columns of the merge key; direct are those of them
	// written to the table as they are.
	key    []string
	direct []string
	// refs resolve key codes to the table's id columns.
	refs []ref
	// values are the other CSV columns, each a table column, ACTIVE_FLAG last.
	values []string
	// required values must not be empty on an active row.
	required []string
	// defaults fill an empty value.
	defaults map[string]string
	// current selects every row: the id, then the key and value columns as
	// text, the representative row of a key (the active one, else the
	// newest) first.
	current string
}

// ref resolves the pipeline code in column pipeline (and the task code in
// column task, when set) to the id stored in the table column column.
type ref struct {
	column, pipeline, task string
}

// The CSV columns every file shares.
const (
	colPipeline   = "PIPELINE_CODE"
	colTask       = "TASK_CODE"
	colUpPipeline = "DEPENDS_ON_PIPELINE_CODE"
	colUpTask     = "DEPENDS_ON_TASK_CODE"
	colActive     = "ACTIVE_FLAG"
)

// The value kinds checked when a file is read and compared.
var (
	flagColumns    = map[string]bool{colActive: true, "CATCHUP": true, "CONSUME_REPAIRS": true}
	integerColumns = map[string]bool{"MAX_CATCHUP_RUNS": true, "RUN_CONDITION_COUNT": true, "SEQUENCE_NUMBER": true}
	numericColumns = map[string]bool{"SLA_IN_HOURS": true}
	jsonColumns    = map[string]bool{"PIPELINE_PARAMETERS": true}
)

// representative orders the rows of one key: the active row, else the newest.
const representative = "CASE WHEN x.ACTIVE_FLAG = 'Y' THEN 0 ELSE 1 END"

// files are the six files, parents before children: the order Sync applies
// them in and the order of the revision's hash.
var files = []file{
	{
		name: "pipelines.csv", table: "CFG_PIPELINES", id: "PIPELINE_ID",
		key: []string{colPipeline}, direct: []string{colPipeline},
		values: []string{"PIPELINE_NAME", "DESCRIPTION", "REFRESH_TYPE", "RUN_SCHEDULE", "SCHEDULE_TIMEZONE",
			"SCHEDULE_START_DATE", "CATCHUP", "MAX_CATCHUP_RUNS", "OVERLAP_POLICY", "SLA_IN_HOURS",
			"PIPELINE_PARAMETERS", colActive},
		required: []string{"PIPELINE_NAME", "REFRESH_TYPE"},
		defaults: map[string]string{"CATCHUP": "N", "MAX_CATCHUP_RUNS": "1", "OVERLAP_POLICY": "SKIP", colActive: "Y"},
		current: `SELECT x.PIPELINE_ID, x.PIPELINE_CODE, x.PIPELINE_NAME, x.DESCRIPTION, x.REFRESH_TYPE, x.RUN_SCHEDULE,
       x.SCHEDULE_TIMEZONE, CAST(x.SCHEDULE_START_DATE AS TEXT), x.CATCHUP, CAST(x.MAX_CATCHUP_RUNS AS TEXT),
       x.OVERLAP_POLICY, CAST(x.SLA_IN_HOURS AS TEXT), CAST(x.PIPELINE_PARAMETERS AS TEXT), x.ACTIVE_FLAG
  FROM CFG_PIPELINES x
 ORDER BY x.PIPELINE_CODE, ` + representative + `, x.PIPELINE_ID DESC`,
	},
	{
		name: "tasks.csv", table: "CFG_TASKS", id: "TASK_ID",
		key: []string{colPipeline, colTask}, direct: []string{colTask},
		refs:     []ref{{column: "PIPELINE_ID", pipeline: colPipeline}},
		values:   []string{"TASK_TYPE", "HANDLER", "RUN_CONDITION", "RUN_CONDITION_COUNT", colActive},
		required: []string{"TASK_TYPE", "HANDLER"},
		defaults: map[string]string{colActive: "Y"},
		current: `SELECT x.TASK_ID, p.PIPELINE_CODE, x.TASK_CODE, x.TASK_TYPE, x.HANDLER, x.RUN_CONDITION,
       CAST(x.RUN_CONDITION_COUNT AS TEXT), x.ACTIVE_FLAG
  FROM CFG_TASKS x
  JOIN CFG_PIPELINES p ON p.PIPELINE_ID = x.PIPELINE_ID
 ORDER BY p.PIPELINE_CODE, x.TASK_CODE, ` + representative + `, x.TASK_ID DESC`,
	},
	{
		name: "task_parameters.csv", table: "CFG_TASK_PARAMETERS", id: "TASK_PARAMETER_ID",
		key: []string{colPipeline, colTask, "PARAMETER_NAME"}, direct: []string{"PARAMETER_NAME"},
		refs:     []ref{{column: "TASK_ID", pipeline: colPipeline, task: colTask}},
		values:   []string{"PARAMETER_VALUE", colActive},
		defaults: map[string]string{colActive: "Y"},
		current: `SELECT x.TASK_PARAMETER_ID, p.PIPELINE_CODE, t.TASK_CODE, x.PARAMETER_NAME, x.PARAMETER_VALUE, x.ACTIVE_FLAG
  FROM CFG_TASK_PARAMETERS x
  JOIN CFG_TASKS t ON t.TASK_ID = x.TASK_ID
  JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID
 ORDER BY p.PIPELINE_CODE, t.TASK_CODE, x.PARAMETER_NAME, ` + representative + `, x.TASK_PARAMETER_ID DESC`,
	},
	{
		name: "task_dependencies.csv", table: "CFG_TASK_DEPENDENCY", id: "TASK_DEPENDENCY_ID",
		key:    []string{colPipeline, colTask, colUpPipeline, colUpTask, "DEPENDENCY_TYPE"},
		direct: []string{"DEPENDENCY_TYPE"},
		refs: []ref{{column: "PIPELINE_ID", pipeline: colPipeline}, {column: "TASK_ID", pipeline: colPipeline, task: colTask},
			{column: "DEPENDS_ON_PIPELINE_ID", pipeline: colUpPipeline},
			{column: "DEPENDS_ON_TASK_ID", pipeline: colUpPipeline, task: colUpTask}},
		values:   []string{"CONSUME_REPAIRS", colActive},
		defaults: map[string]string{"CONSUME_REPAIRS": "Y", colActive: "Y"},
		current: `SELECT x.TASK_DEPENDENCY_ID, p.PIPELINE_CODE, t.TASK_CODE, up.PIPELINE_CODE, ut.TASK_CODE,
       x.DEPENDENCY_TYPE, x.CONSUME_REPAIRS, x.ACTIVE_FLAG
  FROM CFG_TASK_DEPENDENCY x
  JOIN CFG_PIPELINES p ON p.PIPELINE_ID = x.PIPELINE_ID
  JOIN CFG_TASKS t ON t.TASK_ID = x.TASK_ID
  JOIN CFG_TASKS ut ON ut.TASK_ID = x.DEPENDS_ON_TASK_ID
  JOIN CFG_PIPELINES up ON up.PIPELINE_ID = ut.PIPELINE_ID
 ORDER BY p.PIPELINE_CODE, t.TASK_CODE, up.PIPELINE_CODE, ut.TASK_CODE, x.DEPENDENCY_TYPE, ` + representative + `, x.TASK_DEPENDENCY_ID DESC`,
	},
	{
		name: "pipeline_dependencies.csv", table: "CFG_PIPELINE_DEPENDENCY", id: "PIPELINE_DEPENDENCY_ID",
		key: []string{colPipeline, colUpPipeline, "DEPENDENCY_TYPE"}, direct: []string{"DEPENDENCY_TYPE"},
		refs:     []ref{{column: "PIPELINE_ID", pipeline: colPipeline}, {column: "DEPENDS_ON_PIPELINE_ID", pipeline: colUpPipeline}},
		values:   []string{"CONSUME_REPAIRS", colActive},
		defaults: map[string]string{"CONSUME_REPAIRS": "Y", colActive: "Y"},
		current: `SELECT x.PIPELINE_DEPENDENCY_ID, p.PIPELINE_CODE, up.PIPELINE_CODE, x.DEPENDENCY_TYPE, x.CONSUME_REPAIRS, x.ACTIVE_FLAG
  FROM CFG_PIPELINE_DEPENDENCY x
  JOIN CFG_PIPELINES p ON p.PIPELINE_ID = x.PIPELINE_ID
  JOIN CFG_PIPELINES up ON up.PIPELINE_ID = x.DEPENDS_ON_PIPELINE_ID
 ORDER BY p.PIPELINE_CODE, up.PIPELINE_CODE, x.DEPENDENCY_TYPE, ` + representative + `, x.PIPELINE_DEPENDENCY_ID DESC`,
	},
	{
		name: "business_rules.csv", table: "CFG_BUSINESS_RULES", id: "BUSINESS_RULE_ID",
		key: []string{colPipeline, colTask, "BUSINESS_RULE_NAME"}, direct: []string{"BUSINESS_RULE_NAME"},
		refs: []ref{{column: "PIPELINE_ID", pipeline: colPipeline}, {column: "TASK_ID", pipeline: colPipeline, task: colTask}},
		values: []string{"BUSINESS_RULE_TYPE", "SEQUENCE_NUMBER", "BUSINESS_RULE_KEY_COLUMN", "TARGET_TABLE",
			"BUSINESS_RULE_SQL", colActive},
		required: []string{"BUSINESS_RULE_TYPE", "SEQUENCE_NUMBER", "BUSINESS_RULE_KEY_COLUMN", "TARGET_TABLE", "BUSINESS_RULE_SQL"},
		defaults: map[string]string{colActive: "Y"},
		current: `SELECT x.BUSINESS_RULE_ID, p.PIPELINE_CODE, t.TASK_CODE, x.BUSINESS_RULE_NAME, x.BUSINESS_RULE_TYPE,
       CAST(x.SEQUENCE_NUMBER AS TEXT), x.BUSINESS_RULE_KEY_COLUMN, x.TARGET_TABLE, x.BUSINESS_RULE_SQL, x.ACTIVE_FLAG
  FROM CFG_BUSINESS_RULES x
  JOIN CFG_PIPELINES p ON p.PIPELINE_ID = x.PIPELINE_ID
  JOIN CFG_TASKS t ON t.TASK_ID = x.TASK_ID
 ORDER BY p.PIPELINE_CODE, t.TASK_CODE, x.BUSINESS_RULE_NAME, ` + representative + `, x.BUSINESS_RULE_ID DESC`,
	},
}

// header is the file's CSV header: the key, then the values.
func (f *file) header() []string { return append(append([]string{}, f.key...), f.values...) }
