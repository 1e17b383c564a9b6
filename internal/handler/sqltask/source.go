package sqltask

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
	"github.com/etl-craft/etl-craft/internal/suggest"
)

// SQLFilesDir is the project folder SOURCE_SQL_FILE paths are inside.
const SQLFilesDir = "sql_files"

// substitution is a $$ token and the switch parameter that enables it.
type substitution struct {
	token  string
	param  string
	value  func(t *handler.Task) string
	reason string // what the token becomes, for the docs and messages
}

// substitutions are the tokens a SOURCE_SQL may use, each with its switch.
var substitutions = []substitution{
	{"$$pipeline_id", "PIPELINE_ID_SUBSTITUTION",
		func(t *handler.Task) string { return strconv.FormatInt(t.PipelineID, 10) }, "the pipeline's id"},
	{"$$pipeline_run_id", "PIPELINE_RUN_ID_SUBSTITUTION",
		func(t *handler.Task) string { return strconv.FormatInt(t.PipelineRunID, 10) }, "the run's id"},
	{"$$task_run_id", "TASK_RUN_ID_SUBSTITUTION",
		func(t *handler.Task) string { return strconv.FormatInt(t.TaskRunID, 10) }, "the task run's id"},
	{"$$pipeline_run_id_filter", "PIPELINE_RUN_ID_FILTER", runFilter, "the incremental filter"},
	{"$$run_date", "RUN_DATE_SUBSTITUTION",
		func(t *handler.Task) string { return "DATE '" + t.RunDate.UTC().Format("2006-01-02") + "'" }, "the run date"},
}

// runFilter is pipeline_run_id = <run> for an INCREMENTAL pipeline, so the
// SELECT reads only this run's rows, and 1=1 (every row) for a FULL one.
func runFilter(t *handler.Task) string {
	if t.RefreshType == pipeline.Incremental {
		return "pipeline_run_id = " + strconv.FormatInt(t.PipelineRunID, 10)
	}
	return "1=1"
}

// source is the task's SELECT, read and checked.
type source struct {
	name string // SOURCE_SQL, or SOURCE_SQL_FILE <path>
	text string // the single statement, tokens substituted, without its ;
}

// ReadSource returns a SQL task's SELECT as written, before any token is
// substituted: SOURCE_SQL, or the file SOURCE_SQL_FILE names inside the
// project's sql_files/, with the parameter it came from.
func ReadSource(projectDir string, params map[string]string) (name, text string, err error) {
	return readSource(&handler.Task{ProjectDir: projectDir, Params: params})
}

// readSource reads SOURCE_SQL or the SOURCE_SQL_FILE under sql_files/.
func readSource(t *handler.Task) (name, text string, err error) {
	if v, ok := t.Params[pSourceSQL]; ok {
		return pSourceSQL, v, nil
	}
	rel := strings.TrimSpace(t.Params[pSourceSQLFile])
	name = pSourceSQLFile + " " + rel
	path, err := sqlFilePath(t.ProjectDir, rel)
	if err != nil {
		return name, "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return name, "", fmt.Errorf("%s cannot be read: %w", name, err)
	}
	return name, string(b), nil
}

// sqlFilePath resolves a SOURCE_SQL_FILE path inside <project>/sql_files/,
// refusing absolute paths, .. and symbolic links that lead outside it. The
// path may start with sql_files/ or be written from inside it.
func sqlFilePath(projectDir, rel string) (string, error) {
	where := "SOURCE_SQL_FILE " + rel
	slashed := filepath.ToSlash(rel)
	switch {
	case rel == "":
		return "", fmt.Errorf("SOURCE_SQL_FILE is empty: name a file inside %s/", SQLFilesDir)
	case filepath.IsAbs(rel) || strings.HasPrefix(slashed, "/"):
		return "", fmt.Errorf("%s is absolute: name it from inside %s/", where, SQLFilesDir)
	case slices.Contains(strings.Split(slashed, "/"), ".."):
		return "", fmt.Errorf("%s climbs out with ..: SQL files must be inside %s/", where, SQLFilesDir)
	}
	root := filepath.Join(projectDir, SQLFilesDir)
	path := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(slashed, SQLFilesDir+"/")))
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("%s: the folder %s does not exist", where, root)
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist in %s", where, root)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", fmt.Errorf("%s leads outside %s/ through a symbolic link", where, SQLFilesDir)
	}
	return real, nil
}

// prepareSource reads the task's SELECT, substitutes the switched-on
// tokens and checks that one read-only statement remains. Every problem is
// returned; none of them is worth running the task with.
func prepareSource(t *handler.Task, switches map[string]bool) (source, []string) {
	name, text, err := readSource(t)
	if err != nil {
		return source{name: name}, []string{err.Error()}
	}
	text, problems := substitute(t, name, text, switches)
	if len(problems) > 0 {
		return source{name: name}, problems
	}
	stmt, err := readOnly(name, text)
	if err != nil {
		return source{name: name}, []string{err.Error()}
	}
	return source{name: name, text: stmt}, nil
}

// substitute replaces the tokens of text outside literals and comments,
// checking each against its switch: a token used without its switch, a
// switch without its token and an unknown $$ token are problems.
func substitute(t *handler.Task, name, text string, switches map[string]bool) (string, []string) {
	var problems []string
	used := map[string]bool{}
	known := make([]string, len(substitutions))
	for i, sub := range substitutions {
		known[i] = sub.token
	}
	var b strings.Builder
	last := 0
	for _, it := range sqlscan.Scan(text, sqlscan.Task) {
		if it.Kind != sqlscan.Substitution {
			continue
		}
		i := slices.IndexFunc(substitutions, func(sub substitution) bool { return sub.token == it.Text })
		if i < 0 {
			problems = append(problems, fmt.Sprintf("%s line %d: %s is not a token etl-craft knows%s (tokens: %s)",
				name, it.Line, it.Text, suggest.DidYouMean(it.Text, known), strings.Join(known, ", ")))
			continue
		}
		sub := substitutions[i]
		used[sub.param] = true
		if !switches[sub.param] {
			problems = append(problems, fmt.Sprintf("%s line %d uses %s, but %s is not true: set %s=true to substitute %s",
				name, it.Line, sub.token, sub.param, sub.param, sub.reason))
			continue
		}
		b.WriteString(text[last:it.Pos])
		b.WriteString(sub.value(t))
		last = it.End()
	}
	b.WriteString(text[last:])
	for _, sub := range substitutions {
		if switches[sub.param] && !used[sub.param] {
			problems = append(problems, fmt.Sprintf("%s is true, but %s never uses %s outside quotes and comments: remove the switch or use the token",
				sub.param, name, sub.token))
		}
	}
	return b.String(), problems
}

// readOnlyStarts are the words a task's statement may begin with.
var readOnlyStarts = []string{"SELECT", "WITH", "TABLE", "VALUES"}

// writingWords are the words that make a statement starting with SELECT or
// WITH write or lock, anywhere outside literals, comments and qualified
// names: a data-modifying WITH, SELECT … INTO, FOR UPDATE.
var writingWords = []string{"INSERT", "UPDATE", "DELETE", "MERGE", "INTO"}

// readOnly returns the one statement of text, without a trailing ; or
// trailing comments, when it only reads.
func readOnly(name, text string) (string, error) {
	stmts := sqlscan.Split(text, sqlscan.Postgres)
	switch len(stmts) {
	case 0:
		return "", fmt.Errorf("%s holds no statement: write one SELECT", name)
	case 1:
	default:
		return "", fmt.Errorf("%s holds %d statements (the second starts on line %d): a SQL task takes one read-only SELECT and etl-craft performs the write its SQL_ACTION names",
			name, len(stmts), stmts[1].Line)
	}
	stmt := stmts[0]
	tokens := sqlscan.Scan(stmt.Text, sqlscan.Task)
	if open := Unclosed(tokens); open != "" {
		return "", fmt.Errorf("%s leaves %s open", name, open)
	}
	var code []sqlscan.Token
	for _, it := range tokens {
		if isCode(it) {
			code = append(code, it)
		}
	}
	first := ""
	for _, it := range code {
		if it.Kind == sqlscan.Symbol && it.Text == "(" {
			continue
		}
		first = strings.ToUpper(it.Text)
		break
	}
	if !slices.Contains(readOnlyStarts, first) {
		return "", fmt.Errorf("%s starts with %s: it must be one read-only statement starting with SELECT, WITH, TABLE or VALUES, because etl-craft performs the write its SQL_ACTION names",
			name, orNothing(first))
	}
	for i, it := range code {
		if it.Kind != sqlscan.Word || !slices.Contains(writingWords, strings.ToUpper(it.Text)) {
			continue
		}
		if i > 0 && code[i-1].Kind == sqlscan.Symbol && code[i-1].Text == "." {
			continue
		}
		return "", fmt.Errorf("%s may only read, but line %d holds %s: remove it (quote a column of that name), because etl-craft performs the write its SQL_ACTION names",
			name, stmt.Line+it.Line-1, strings.ToUpper(it.Text))
	}
	return stmt.Text, nil
}

// isCode reports whether t counts as the statement's own words and
// symbols: not whitespace or a comment, and not a literal, quoted identifier
// or dollar-quoted body, whose content is data.
func isCode(t sqlscan.Token) bool {
	switch t.Kind {
	case sqlscan.Space, sqlscan.Comment, sqlscan.String, sqlscan.Identifier, sqlscan.DollarQuoted:
		return false
	}
	return true
}

// Unclosed names the construct that tokens leave open at the end of their
// text, or returns "" when they close every one.
func Unclosed(tokens []sqlscan.Token) string {
	if len(tokens) == 0 || !tokens[len(tokens)-1].Open {
		return ""
	}
	switch t := tokens[len(tokens)-1]; t.Kind {
	case sqlscan.String:
		return "a string literal"
	case sqlscan.Identifier:
		return "a quoted identifier"
	case sqlscan.DollarQuoted:
		return "a dollar-quoted body " + t.Tag()
	}
	return "a /* comment"
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// checkFragment checks an SQL fragment a parameter holds, such as
// MERGE_DEDUPE_ORDER, which etl-craft writes into its own statements: no
// semicolons, comments, tokens or unclosed constructs, and balanced
// parentheses.
func checkFragment(param, text string) error {
	tokens := sqlscan.Scan(text, sqlscan.Task)
	if open := Unclosed(tokens); open != "" {
		return fmt.Errorf("%s leaves %s open", param, open)
	}
	depth := 0
	for _, it := range tokens {
		switch {
		case it.Kind == sqlscan.Comment:
			return fmt.Errorf("%s holds a comment: remove it", param)
		case it.Kind == sqlscan.Substitution:
			return fmt.Errorf("%s holds %s: tokens are substituted only in the SELECT", param, it.Text)
		case it.Text == ";":
			return fmt.Errorf("%s holds a semicolon: it is one ORDER BY list, such as updated_at DESC", param)
		case it.Text == "(":
			depth++
		case it.Text == ")":
			depth--
		}
		if depth < 0 {
			return fmt.Errorf("%s has unbalanced parentheses", param)
		}
	}
	if depth != 0 {
		return fmt.Errorf("%s has unbalanced parentheses", param)
	}
	return nil
}
