// Package doctor checks a deployment: the configuration, its secrets, the
// Engine DB (connection, tables, migrations, privileges or file access), the
// warehouse, email, alert channels and cloning settings. It reports every check, not only
// the first failure. setup runs the same checks, except the Engine DB's
// tables and migrations, before it changes anything.
package doctor

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Status is a check's result.
type Status string

// The check results.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

// Check is one line of the report.
type Check struct {
	Status Status
	Name   string
	Detail string
}

// String formats the check as doctor prints it: "[OK  ] Name: detail".
func (c Check) String() string {
	return fmt.Sprintf("[%-4s] %s: %s", c.Status, c.Name, c.Detail)
}

// Report is every check, in the order they ran.
type Report struct {
	Checks []Check
}

// Counts returns how many checks passed, warned and failed.
func (r Report) Counts() (ok, warnings, failed int) {
	for _, c := range r.Checks {
		switch c.Status {
		case OK:
			ok++
		case Warn:
			warnings++
		case Fail:
			failed++
		}
	}
	return ok, warnings, failed
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	_, _, f := r.Counts()
	return f > 0
}

// Summary is the last line: "<n> ok, <n> warning(s), <n> failed".
func (r Report) Summary() string {
	ok, w, f := r.Counts()
	return fmt.Sprintf("%d ok, %d warning(s), %d failed", ok, w, f)
}

// Options says what to check.
type Options struct {
	Config *config.Config
	// Setup leaves out the Engine DB tables and migrations checks, which
	// setup itself fixes.
	Setup bool
	// MigrationsDir is the PROJECT migrations folder ("" for none).
	MigrationsDir string
	// Engine are the Engine DB's options.
	Engine engine.Options
	// Warehouse are the warehouse's options; nil when the configuration has
	// no Warehouse section.
	Warehouse *warehouse.Options
}

// doctor accumulates the checks of one run.
type doctor struct {
	opts   Options
	cfg    *config.Config
	report Report
	db     *engine.DB // nil when the Engine DB cannot be reached
}

func (d *doctor) add(s Status, name, format string, args ...any) {
	d.report.Checks = append(d.report.Checks, Check{Status: s, Name: name, Detail: fmt.Sprintf(format, args...)})
}

// Run runs every check that applies to the configuration.
func Run(ctx context.Context, opts Options) Report {
	d := &doctor{opts: opts, cfg: opts.Config}
	defer func() {
		if d.db != nil {
			d.db.Close()
		}
	}()
	d.configuration()
	d.engineDB(ctx)
	d.warehouse(ctx)
	d.email(ctx)
	d.channels(ctx)
	d.cloning(ctx)
	d.files()
	d.projectFolders()
	return d.report
}

func (d *doctor) configuration() {
	c := d.cfg
	d.add(OK, "Configuration", "%s (mode %s, project %s)", c.Path, c.Orchestration.Mode, c.ProjectDir)
	fromVars, asWritten := c.SettingCounts()
	d.add(OK, "Settings", "%d from variables, %d as written", fromVars, asWritten)
	for _, w := range c.AsWrittenWarnings() {
		d.add(Warn, config.AsWrittenCheck, "%s", w)
	}
	d.apiAddress()
	switch c.Orchestration.DependencyGates {
	case "warn":
		d.add(Warn, "Dependency gates", "Dependency_gates is warn: runs go ahead despite unmet dependencies; each bypass is recorded in AUD_RUN_INTERVENTIONS as GATE_BYPASS")
	case "off":
		d.add(Warn, "Dependency gates", "Dependency_gates is off: dependencies are not checked at all and runs go ahead; each bypass is recorded in AUD_RUN_INTERVENTIONS as GATE_BYPASS")
	}
}

// apiAddress warns when Api_address listens beyond this machine: the HTTP
// API speaks plain HTTP, bearer tokens included.
func (d *doctor) apiAddress() {
	addr := d.cfg.Orchestration.APIAddress
	host, _, err := net.SplitHostPort(addr)
	if err == nil && config.Loopback(host) {
		return
	}
	d.add(Warn, "API address", "Api_address %s is not a loopback address: the HTTP API speaks plain HTTP, bearer tokens included; "+
		"put a TLS reverse proxy in front of it and serve the API on 127.0.0.1", addr)
}

// secretCheck reports whether a secret variable resolves, never its value.
func (d *doctor) secretCheck(name, variable string) bool {
	if variable == "" {
		return true
	}
	if _, err := d.cfg.Secret(variable); err != nil {
		d.add(Fail, name, "%v", err)
		return false
	}
	d.add(OK, name, "resolved from %s", variable)
	return true
}

func (d *doctor) projectFolders() {
	var found []string
	for _, f := range []string{"sql_files", "ingestion_scripts", "migrations"} {
		if st, err := os.Stat(filepath.Join(d.cfg.ProjectDir, f)); err == nil && st.IsDir() {
			found = append(found, f)
		}
	}
	if len(found) == 0 {
		d.add(OK, "Project folders", "no sql_files/, ingestion_scripts/ or migrations/ in %s yet", d.cfg.ProjectDir)
		return
	}
	d.add(OK, "Project folders", "%s in %s", strings.Join(found, ", "), d.cfg.ProjectDir)
}

// files checks that every file the configuration names exists.
func (d *doctor) files() {
	type named struct{ setting, path string }
	var list []named
	e := d.cfg.Engine
	for _, p := range []named{{"Engine.key_file", e.KeyFile}, {"Engine.cert_file", e.CertFile}} {
		list = append(list, p)
	}
	for _, k := range []string{"sslrootcert", "sslcert", "sslkey"} {
		list = append(list, named{"Engine.jdbc_url " + k, e.Params[k]})
	}
	if w := d.cfg.Warehouse; w != nil {
		list = append(list, named{"Warehouse.key_file", w.KeyFile}, named{"Warehouse.cert_file", w.CertFile})
		for _, k := range []string{"sslrootcert", "sslcert", "sslkey", "private_key_file"} {
			list = append(list, named{"Warehouse.jdbc_url " + k, w.Params[k]})
		}
	}
	if m := d.cfg.Orchestration.Email; m != nil {
		list = append(list, named{"Orchestration.Email.ca_file", m.CAFile})
	}
	for _, c := range d.cfg.Notifications.Channels {
		list = append(list, named{"Notifications.Channels." + c.Name + ".ca_file", c.CAFile})
	}
	for _, f := range list {
		if f.path == "" {
			continue
		}
		p := f.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(d.cfg.ProjectDir, p)
		}
		if _, err := os.Stat(p); err != nil {
			d.add(Fail, "File", "%s names %s, which does not exist or cannot be read", f.setting, p)
		} else {
			d.add(OK, "File", "%s: %s", f.setting, p)
		}
	}
}
