package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// param is a bind parameter a rule's SQL may use, with the placeholder of
// its value.
type param struct {
	name  string
	value func(b *warehouse.Binder, t *handler.Task) string
}

// params are the bind parameters a rule's SQL may use.
var params = []param{
	{"pipeline_id", func(b *warehouse.Binder, t *handler.Task) string { return b.BigInt(t.PipelineID) }},
	{"pipeline_run_id", func(b *warehouse.Binder, t *handler.Task) string { return b.BigInt(t.PipelineRunID) }},
	{"task_run_id", func(b *warehouse.Binder, t *handler.Task) string { return b.BigInt(t.TaskRunID) }},
	{"run_date", func(b *warehouse.Binder, t *handler.Task) string {
		return "CAST(" + b.Text(t.RunDate.UTC().Format("2006-01-02")) + " AS DATE)"
	}},
}

// ruleSQL is a rule's one statement, read: its tokens, and the bind
// parameter each :name starts (by the index of its colon).
type ruleSQL struct {
	toks   []sqlscan.Token
	params map[int]param
}

// readSQL reads a rule's BUSINESS_RULE_SQL: one statement (a trailing ;
// is dropped), with every literal, quoted name and comment closed, and only
// bind parameters etl-craft knows. A colon of a :: cast, or not followed by
// a name, is no parameter. The problems name the rule.
func readSQL(r rule) (ruleSQL, []string) {
	where := "business rule " + r.name + ": BUSINESS_RULE_SQL"
	stmts := sqlscan.Split(r.sql, sqlscan.Postgres)
	switch len(stmts) {
	case 0:
		return ruleSQL{}, []string{where + " holds no statement: write one correlated SELECT on the target row t"}
	case 1:
	default:
		return ruleSQL{}, []string{fmt.Sprintf("%s holds %d statements (the second starts on line %d): write one correlated SELECT on the target row t",
			where, len(stmts), stmts[1].Line)}
	}
	s := ruleSQL{toks: sqlscan.Scan(stmts[0].Text, sqlscan.Postgres), params: map[int]param{}}
	var problems []string
	if open := sqltask.Unclosed(s.toks); open != "" {
		problems = append(problems, where+" leaves "+open+" open")
	}
	known := make([]string, len(params))
	for i, p := range params {
		known[i] = ":" + p.name
	}
	for i, tk := range s.toks {
		if tk.Kind != sqlscan.Symbol || tk.Text != ":" || i+1 == len(s.toks) || s.toks[i+1].Kind != sqlscan.Word || (i > 0 && s.toks[i-1].Text == ":") {
			continue
		}
		name := s.toks[i+1].Text
		j := slices.IndexFunc(params, func(p param) bool { return strings.EqualFold(p.name, name) })
		if j < 0 {
			problems = append(problems, fmt.Sprintf("%s line %d uses :%s, which is not a bind parameter etl-craft knows (parameters: %s)",
				where, stmts[0].Line+tk.Line-1, name, strings.Join(known, ", ")))
			continue
		}
		s.params[i] = params[j]
	}
	return s, problems
}

// bound returns the statement with each bind parameter replaced by a
// placeholder of the warehouse, its value bound in b.
func (s ruleSQL) bound(b *warehouse.Binder, t *handler.Task) string {
	var out strings.Builder
	for i := 0; i < len(s.toks); i++ {
		p, ok := s.params[i]
		if !ok {
			out.WriteString(s.toks[i].Text)
			continue
		}
		out.WriteString(p.value(b, t))
		i++ // the parameter's name
	}
	return out.String()
}
