package sqltask

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/suggest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The SQL actions: the closed vocabulary of SQL_ACTION.
const (
	CreateTable    = "CREATE_TABLE"
	SetupTable     = "SETUP_TABLE"
	OverwriteTable = "OVERWRITE_TABLE"
	AppendTable    = "APPEND_TABLE"
	SCD1Merge      = "SCD1_MERGE"
	SCD2Merge      = "SCD2_MERGE"
	DropTable      = "DROP_TABLE"
	DeleteRows     = "DELETE_ROWS"
)

// Actions lists every SQL action.
var Actions = []string{CreateTable, SetupTable, OverwriteTable, AppendTable, SCD1Merge, SCD2Merge, DropTable, DeleteRows}

// Groups of actions that share parameters.
var (
	withSelect = []string{CreateTable, SetupTable, OverwriteTable, AppendTable, SCD1Merge, SCD2Merge, DeleteRows}
	merges     = []string{SCD1Merge, SCD2Merge}
	keyed      = []string{SCD1Merge, SCD2Merge, DeleteRows}
	creating   = []string{CreateTable, SetupTable}
	// writers are the actions whose audit columns a SETUP_TABLE target takes.
	writers = []string{CreateTable, OverwriteTable, AppendTable, SCD1Merge, SCD2Merge}
)

// The SQL task parameters.
const (
	pAction           = "SQL_ACTION"
	pTarget           = handler.ParamTargetObject
	pSourceSQL        = "SOURCE_SQL"
	pSourceSQLFile    = "SOURCE_SQL_FILE"
	pMergeKey         = "MERGE_KEY"
	pCompareColumns   = "MERGE_COMPARE_COLUMNS"
	pDedupeOrder      = "MERGE_DEDUPE_ORDER"
	pSetupFor         = "SETUP_FOR"
	pSchemaEvolution  = "SCHEMA_EVOLUTION"
	pPreserveTarget   = "PRESERVE_TARGET"
	pHardDelete       = "HARD_DELETE"
	pTableFormat      = "TABLE_FORMAT"
	pExternalLocation = warehouse.ExternalLocation
	pExternalVolume   = warehouse.ExternalVolume
	pBaseLocation     = warehouse.BaseLocation
	pCatalog          = warehouse.CatalogParameter
)

// parameter is a parameter the SQL handler reads: the actions it applies to
// (nil: every action) and whether its value is true or false.
type parameter struct {
	name    string
	actions []string
	boolean bool
}

// parameters lists what the SQL handler reads.
var parameters = func() []parameter {
	ps := []parameter{
		{name: pAction},
		{name: pTarget},
		{name: pSourceSQL, actions: withSelect},
		{name: pSourceSQLFile, actions: withSelect},
		{name: pMergeKey, actions: keyed},
		{name: pCompareColumns, actions: merges},
		{name: pDedupeOrder, actions: merges},
		{name: pSetupFor, actions: []string{SetupTable}},
		{name: pSchemaEvolution, actions: []string{OverwriteTable, SCD1Merge, SCD2Merge}, boolean: true},
		{name: pPreserveTarget, actions: []string{SCD1Merge}, boolean: true},
		{name: pHardDelete, actions: []string{DeleteRows}, boolean: true},
		{name: pTableFormat},
		{name: pExternalLocation, actions: creating},
		{name: pExternalVolume, actions: creating},
		{name: pBaseLocation, actions: creating},
		{name: pCatalog, actions: creating},
	}
	for _, s := range substitutions {
		ps = append(ps, parameter{name: s.param, actions: withSelect, boolean: true})
	}
	return ps
}()

// taskParameters are read for every task by the run engine and the
// catalog; the SQL handler accepts them as they are.
var taskParameters = []string{"TASK_TIMEOUT_SECONDS", "RETRIES", "RETRY_DELAY_SECONDS", "RETRY_BACKOFF", "DOCUMENTATION", "SOURCE_OBJECT"}

// storageParameters name storage for the table formats and warehouses whose
// created tables need it; the transactional warehouses take none.
var storageParameters = []string{pExternalLocation, pExternalVolume, pBaseLocation, pCatalog}

// plainName is an identifier that needs no quoting.
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// spec is a SQL task's parameters, read and checked.
type spec struct {
	action     string
	target     string   // TARGET_OBJECT as written
	parts      []string // its two or three names
	source     source
	mergeKey   []string
	compare    []string // nil: every column the target has besides the keys and engine columns
	order      string   // MERGE_DEDUPE_ORDER
	setupFor   string
	evolve     bool
	preserve   bool
	hardDelete bool
	format     string            // TABLE_FORMAT, lower case; "" when not set
	storage    []string          // storage parameters set
	storageSet map[string]string // their values
}

// readSpec reads and checks a task's parameters and its SELECT, without
// connecting anywhere: failures stop the task, warnings do not.
func readSpec(t *handler.Task) (s *spec, failures, warnings []string) {
	s = &spec{}
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	p := t.Params
	s.action = strings.TrimSpace(p[pAction])
	switch {
	case s.action == "":
		fail("%s is missing: set it to one of %s", pAction, strings.Join(Actions, ", "))
	case !slices.Contains(Actions, s.action):
		fail("%s %s is not an action%s (actions: %s)", pAction, s.action, suggest.DidYouMean(s.action, Actions), strings.Join(Actions, ", "))
	}
	warnings = unreadParameters(p, s.action)
	bools := map[string]bool{}
	for _, par := range parameters {
		v, ok := p[par.name]
		if !par.boolean || !ok {
			continue
		}
		switch v {
		case "true":
			bools[par.name] = true
		case "false":
		default:
			fail("%s is %q: write true or false", par.name, v)
		}
	}
	s.evolve, s.preserve, s.hardDelete = bools[pSchemaEvolution], bools[pPreserveTarget], bools[pHardDelete]

	s.target = strings.TrimSpace(p[pTarget])
	s.parts, failures = targetParts(s.target, failures)
	if !slices.Contains(Actions, s.action) {
		return s, failures, warnings
	}
	failures = s.readSelect(t, bools, failures)
	failures = s.readMergeParameters(p, failures)
	if s.action == SetupTable {
		s.setupFor = strings.TrimSpace(p[pSetupFor])
		if s.setupFor != "" && !slices.Contains(writers, s.setupFor) {
			fail("%s %s is not a writing action%s: use one of %s", pSetupFor, s.setupFor, suggest.DidYouMean(s.setupFor, writers), strings.Join(writers, ", "))
		}
	}
	switch f := strings.ToLower(strings.TrimSpace(p[pTableFormat])); f {
	case "", "native", "iceberg":
		s.format = f
	default:
		fail("%s is %q: write native or iceberg", pTableFormat, p[pTableFormat])
	}
	for _, name := range storageParameters {
		if v, ok := p[name]; ok && slices.Contains(creating, s.action) {
			s.storage = append(s.storage, name)
			if s.storageSet == nil {
				s.storageSet = map[string]string{}
			}
			s.storageSet[name] = strings.TrimSpace(v)
		}
	}
	_, volume := p[pExternalVolume]
	_, base := p[pBaseLocation]
	if volume != base {
		fail("%s and %s go together: set both or neither", pExternalVolume, pBaseLocation)
	}
	return s, failures, warnings
}

// targetParts checks TARGET_OBJECT: schema.table or database.schema.table,
// each a plain identifier.
func targetParts(target string, failures []string) ([]string, []string) {
	if target == "" {
		return nil, append(failures, pTarget+" is missing: name the table as schema.table (or database.schema.table)")
	}
	parts := strings.Split(target, ".")
	if len(parts) == 1 {
		return nil, append(failures, fmt.Sprintf("%s %s is a bare table name: write schema.table (or database.schema.table)", pTarget, target))
	}
	if len(parts) > 3 {
		return nil, append(failures, fmt.Sprintf("%s %s has %d parts: write schema.table (or database.schema.table)", pTarget, target, len(parts)))
	}
	for _, part := range parts {
		if !plainName.MatchString(part) {
			return nil, append(failures, fmt.Sprintf("%s %s: %q is not a plain name (letters, digits and _, not starting with a digit)", pTarget, target, part))
		}
	}
	return parts, failures
}

// readSelect reads SOURCE_SQL or SOURCE_SQL_FILE: exactly one for every
// action but DROP_TABLE, which takes neither.
func (s *spec) readSelect(t *handler.Task, switches map[string]bool, failures []string) []string {
	_, inline := t.Params[pSourceSQL]
	_, file := t.Params[pSourceSQLFile]
	switch {
	case s.action == DropTable && (inline || file):
		return append(failures, fmt.Sprintf("%s takes no SELECT: remove %s", DropTable, firstOf(inline, pSourceSQL, pSourceSQLFile)))
	case s.action == DropTable:
		return failures
	case inline && file:
		return append(failures, fmt.Sprintf("%s and %s are both set: keep one", pSourceSQL, pSourceSQLFile))
	case !inline && !file:
		return append(failures, fmt.Sprintf("%s needs its SELECT: set %s, or %s to a file inside %s/", s.action, pSourceSQL, pSourceSQLFile, SQLFilesDir))
	}
	src, problems := prepareSource(t, switches)
	s.source = src
	return append(failures, problems...)
}

func firstOf(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}

// readMergeParameters reads MERGE_KEY, MERGE_COMPARE_COLUMNS and
// MERGE_DEDUPE_ORDER for the actions that take them.
func (s *spec) readMergeParameters(p map[string]string, failures []string) []string {
	if !slices.Contains(keyed, s.action) {
		return failures
	}
	var err error
	if s.mergeKey, err = columnList(pMergeKey, p[pMergeKey]); err != nil {
		failures = append(failures, err.Error())
	} else if len(s.mergeKey) == 0 {
		failures = append(failures, fmt.Sprintf("%s needs %s: the pipe-separated key columns, such as customer_id or region|code", s.action, pMergeKey))
	}
	if !slices.Contains(merges, s.action) {
		return failures
	}
	if v, ok := p[pCompareColumns]; ok {
		if s.compare, err = columnList(pCompareColumns, v); err != nil {
			failures = append(failures, err.Error())
		} else if len(s.compare) == 0 {
			failures = append(failures, pCompareColumns+" is empty: list the columns to compare, or remove it to compare every column but the keys")
		}
	}
	if v, ok := p[pDedupeOrder]; ok {
		s.order = strings.TrimSpace(v)
		if s.order == "" {
			failures = append(failures, pDedupeOrder+" is empty: write an ORDER BY list, such as updated_at DESC, or remove it")
		} else if err := checkFragment(pDedupeOrder, s.order); err != nil {
			failures = append(failures, err.Error())
		}
	}
	return failures
}

// columnList reads a pipe-separated list of plain column names.
func columnList(param, value string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(value, "|") {
		c = strings.TrimSpace(c)
		switch {
		case c == "" && strings.TrimSpace(value) == "":
			return nil, nil
		case !plainName.MatchString(c):
			return nil, fmt.Errorf("%s %q: %q is not a plain column name", param, value, c)
		case slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, c) }):
			return nil, fmt.Errorf("%s %q names %s twice", param, value, c)
		}
		out = append(out, c)
	}
	return out, nil
}

// unreadParameters warns about parameters the action does not read: unknown
// names with the nearest known ones, and known ones of other actions.
func unreadParameters(p map[string]string, action string) []string {
	known := slices.Clone(taskParameters)
	for _, par := range parameters {
		known = append(known, par.name)
	}
	names := make([]string, 0, len(p))
	for name := range p {
		names = append(names, name)
	}
	sort.Strings(names)
	var warnings []string
	for _, name := range names {
		i := slices.IndexFunc(parameters, func(par parameter) bool { return par.name == name })
		switch {
		case i < 0 && !slices.Contains(taskParameters, name):
			warnings = append(warnings, fmt.Sprintf("%s is not a parameter SQL tasks read%s", name, suggest.DidYouMean(name, known)))
		case i >= 0 && parameters[i].actions != nil && slices.Contains(Actions, action) && !slices.Contains(parameters[i].actions, action):
			warnings = append(warnings, fmt.Sprintf("%s is read only by %s; %s ignores it", name, strings.Join(parameters[i].actions, ", "), action))
		}
	}
	return warnings
}
