package e2e

import (
	"fmt"
	"sort"
	"strings"
)

// Task is one task of a test pipeline: its code, its handler (SQL when
// empty), its parameters, and its dependencies written "upstream:TYPE".
type Task struct {
	Code    string
	Handler string
	Params  map[string]string
	Deps    []string
}

// Quote writes a SQL string literal.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Pipeline returns a project migration that registers the pipeline and its
// tasks, referring to rows by code as users do.
func Pipeline(pipe string, tasks ...Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES (%s, %s, 'FULL');\n", Quote(pipe), Quote(pipe))
	lookup := func(code string) string {
		return fmt.Sprintf("(SELECT t.TASK_ID FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y' "+
			"WHERE p.PIPELINE_CODE = %s AND t.TASK_CODE = %s AND t.ACTIVE_FLAG = 'Y')", Quote(pipe), Quote(code))
	}
	for _, t := range tasks {
		handler := t.Handler
		if handler == "" {
			handler = "SQL"
		}
		fmt.Fprintf(&b, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT %s, 'ETL', PIPELINE_ID, %s "+
			"FROM CFG_PIPELINES WHERE PIPELINE_CODE = %s AND ACTIVE_FLAG = 'Y';\n", Quote(t.Code), Quote(handler), Quote(pipe))
		names := make([]string, 0, len(t.Params))
		for n := range t.Params {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES (%s, %s, %s);\n",
				lookup(t.Code), Quote(n), Quote(t.Params[n]))
		}
	}
	for _, t := range tasks {
		for _, d := range t.Deps {
			up, typ, _ := strings.Cut(d, ":")
			fmt.Fprintf(&b, "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) "+
				"SELECT PIPELINE_ID, %s, %s, %s FROM CFG_PIPELINES WHERE PIPELINE_CODE = %s AND ACTIVE_FLAG = 'Y';\n",
				lookup(t.Code), lookup(up), Quote(typ), Quote(pipe))
		}
	}
	return b.String()
}

// CreateTable is a SQL task that creates target from the SELECT.
func CreateTable(code, target, query string, deps ...string) Task {
	return SQL(code, "CREATE_TABLE", target, query, deps...)
}

// SQL is a SQL task of the action writing target from the SELECT.
func SQL(code, action, target, query string, deps ...string) Task {
	return Task{Code: code, Deps: deps, Params: map[string]string{"SQL_ACTION": action, "TARGET_OBJECT": target, "SOURCE_SQL": query}}
}

// With returns the task with more parameters, given as name, value pairs.
func (t Task) With(nv ...string) Task {
	for i := 0; i+1 < len(nv); i += 2 {
		t.Params[nv[i]] = nv[i+1]
	}
	return t
}
