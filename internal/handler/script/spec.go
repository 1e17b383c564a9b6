package script

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
)

// The parameters a PYTHON task reads, and the folder its scripts live in.
const (
	pScript    = "SCRIPT_NAME"
	pInput     = "INPUT_PARAMS"
	scriptsDir = "ingestion_scripts"
)

// spec is a PYTHON task's parameters, read.
type spec struct {
	// name is SCRIPT_NAME as written; path the script's absolute path.
	name, path string
	input      map[string]any
}

// readSpec reads and checks a task's SCRIPT_NAME and INPUT_PARAMS. A
// script must be a .py file inside the project's ingestion_scripts/, with
// no part of its path (.., an absolute path, a symbolic link) leading out
// of the folder; the file must exist when exists is set. INPUT_PARAMS is a
// JSON object.
func readSpec(t *handler.Task, exists bool) (spec, []string) {
	var s spec
	var failures []string
	s.name = strings.TrimSpace(t.Params[pScript])
	if p, problem := scriptPath(t.ProjectDir, s.name, exists); problem != "" {
		failures = append(failures, problem)
	} else {
		s.path = p
	}
	in, problem := inputParams(t.Params[pInput])
	if problem != "" {
		failures = append(failures, problem)
	}
	s.input = in
	return s, failures
}

// scriptPath resolves SCRIPT_NAME inside <project>/ingestion_scripts, or
// says what is wrong with it.
func scriptPath(project, name string, exists bool) (string, string) {
	switch {
	case name == "":
		return "", pScript + " is missing: name the script's .py file inside " + scriptsDir + "/"
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return "", pScript + " " + name + " is an absolute path: name the script relative to " + scriptsDir + "/"
	case !strings.HasSuffix(name, ".py"):
		return "", pScript + " " + name + " is not a .py file"
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", pScript + " " + name + " leads out of " + scriptsDir + "/ (..): keep scripts inside the folder"
		}
	}
	dir := filepath.Join(project, scriptsDir)
	path := filepath.Join(dir, filepath.FromSlash(name))
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		if exists {
			return "", pScript + " " + name + " does not exist: expected " + path
		}
		return path, ""
	}
	if err != nil {
		return "", pScript + " " + name + " cannot be read: " + err.Error()
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", pScript + " " + name + ": " + scriptsDir + "/ cannot be read: " + err.Error()
	}
	if rel, err := filepath.Rel(realDir, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", pScript + " " + name + " is a symbolic link leading out of " + scriptsDir + "/ (to " + real + "): keep scripts inside the folder"
	}
	if info, err := os.Stat(real); err != nil || !info.Mode().IsRegular() {
		return "", pScript + " " + name + " is not a regular file"
	}
	return real, ""
}

// inputParams reads INPUT_PARAMS: empty is no parameters; a JSON object is
// the dict the script gets. A JSON array (the form of etl-craft 0.1.0) is
// refused with how to write it as an object.
func inputParams(text string) (map[string]any, string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return map[string]any{}, ""
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, pInput + " is not valid JSON (" + err.Error() + "): write a JSON object such as {\"source\": \"orders.csv\"}"
	}
	switch v := v.(type) {
	case map[string]any:
		return v, ""
	case []any:
		return nil, pInput + " is a JSON array, the form of etl-craft 0.1.0: write it as a JSON object, naming each value " +
			"(for example [\"orders.csv\", 100] becomes {\"source\": \"orders.csv\", \"batch\": 100}), and read task.input_params[\"source\"] in the script"
	}
	return nil, pInput + " is a JSON " + jsonKind(v) + ": write a JSON object such as {\"source\": \"orders.csv\"}"
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}
