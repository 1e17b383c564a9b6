package config

import (
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	// The IANA zone database, so Timezone works on hosts without one.
	_ "time/tzdata"
)

// orchestrationKeys are the settings of the Orchestration section.
var orchestrationKeys = []string{
	"Mode", "Name", "Api_address", "Log_dir", "Task_timeout_seconds", "Max_parallel_tasks",
	"Shutdown_grace_seconds", "Timezone", "Enforce_sla", "Gate_wait_minutes", "Dependency_gates",
	"Global_dag", "Catchup", "Tags", "Retries", "Retry_delay_minutes", "Depends_on_past",
	"Email_on_failure", "Email_recipients", "Allow_schedule", "Email", "Python", "Metrics_public", "Traces_endpoint",
}

// orchestration reads the Orchestration section.
func (l *loader) orchestration(cfg *Config, top *mapping) error {
	s, err := l.selectProfile(top, "Orchestration", "Email")
	if err != nil {
		return err
	}
	f := s.fields
	if err := f.unknown(orchestrationKeys); err != nil {
		return err
	}
	o := Orchestration{Profile: s.profile}
	if o.Mode, err = f.choice("Mode", "", ModeLocal, ModeRemote); err != nil {
		return err
	}
	if o.Name, err = f.text("Name"); err != nil {
		return err
	}
	if o.APIAddress, err = l.apiAddress(f); err != nil {
		return err
	}
	if o.LogDir, err = f.path("Log_dir", DefaultLogDir); err != nil {
		return err
	}
	if o.Python, err = f.text("Python"); err != nil {
		return err
	}
	if o.MetricsPublic, err = f.flag("Metrics_public", false); err != nil {
		return err
	}
	if o.TracesEndpoint, err = l.tracesEndpoint(f); err != nil {
		return err
	}
	numbers := []struct {
		key     string
		into    *int
		def, lo int
	}{
		{"Task_timeout_seconds", &o.TaskTimeoutSeconds, DefaultTaskTimeoutSeconds, 0},
		{"Max_parallel_tasks", &o.MaxParallelTasks, DefaultMaxParallelTasks, 1},
		{"Shutdown_grace_seconds", &o.ShutdownGraceSeconds, DefaultShutdownGraceSeconds, 0},
		{"Gate_wait_minutes", &o.GateWaitMinutes, DefaultGateWaitMinutes, 0},
	}
	for _, n := range numbers {
		if *n.into, err = f.number(n.key, n.def, n.lo, MaxWhole); err != nil {
			return err
		}
	}
	if err := l.timezone(f, &o); err != nil {
		return err
	}
	if o.DependencyGates, err = f.choice("Dependency_gates", "enforce", "enforce", "warn", "off"); err != nil {
		return err
	}
	if o.Mode == ModeRemote && o.DependencyGates != "enforce" {
		v, _ := f.get("Dependency_gates")
		return l.fail(v.line(), v.path, "is %s, but Mode is remote: in remote mode the orchestrator's sensors "+
			"check dependencies and etl-craft checks no gate, so there is nothing to relax; remove Dependency_gates", o.DependencyGates)
	}
	if err := dagDefaults(f, &o); err != nil {
		return err
	}
	email, err := f.sub("Email")
	if err != nil {
		return err
	}
	if email != nil {
		if o.Email, err = l.email(email); err != nil {
			return err
		}
	}
	cfg.Orchestration = o
	return nil
}

// dagDefaults reads the switches and DAG defaults of generated DAGs.
func dagDefaults(f *fields, o *Orchestration) error {
	var err error
	flags := []struct {
		key  string
		into *bool
		def  bool
	}{
		{"Enforce_sla", &o.EnforceSLA, false},
		{"Global_dag", &o.GlobalDAG, false},
		{"Allow_schedule", &o.AllowSchedule, true},
	}
	for _, b := range flags {
		if *b.into, err = f.flag(b.key, b.def); err != nil {
			return err
		}
	}
	optional := []struct {
		key  string
		into **bool
	}{
		{"Catchup", &o.Catchup}, {"Depends_on_past", &o.DependsOnPast}, {"Email_on_failure", &o.EmailOnFailure},
	}
	for _, b := range optional {
		if *b.into, err = f.boolean(b.key); err != nil {
			return err
		}
	}
	if o.Retries, err = f.whole("Retries", 0, MaxWhole); err != nil {
		return err
	}
	if o.RetryDelayMinutes, err = f.whole("Retry_delay_minutes", 0, MaxWhole); err != nil {
		return err
	}
	if o.Tags, err = f.list("Tags"); err != nil {
		return err
	}
	o.EmailRecipients, err = f.list("Email_recipients")
	return err
}

var apiHost = regexp.MustCompile(`^[a-zA-Z0-9.:%_-]+$`)

// apiAddress reads Api_address: host:port or [ipv6]:port, port 0 to 65535,
// without user, path or query.
func (l *loader) apiAddress(f *fields) (string, error) {
	v, err := f.get("Api_address")
	if err != nil || !v.set {
		return DefaultAPIAddress, err
	}
	host, port, splitErr := net.SplitHostPort(v.text)
	n, portErr := strconv.Atoi(port)
	if splitErr != nil || host == "" || !apiHost.MatchString(host) || portErr != nil ||
		!asciiDigits.MatchString(port) || n < 0 || n > 65535 {
		return "", l.bad(v, "must be host:port, such as %s or [::1]:8730, with a port from 0 to 65535; got '%s'", DefaultAPIAddress, v.text)
	}
	return v.text, nil
}

// tracesEndpoint reads Traces_endpoint: the http or https URL of an
// OTLP/HTTP receiver, without user, query or fragment; "" when absent.
func (l *loader) tracesEndpoint(f *fields) (string, error) {
	v, err := f.get("Traces_endpoint")
	if err != nil || !v.set {
		return "", err
	}
	u, perr := url.Parse(v.text)
	if perr == nil && u.User != nil {
		// Not echoed: the user part may hold a password.
		return "", l.bad(v, "must not hold a user or password; give the receiver's credentials in OTEL_EXPORTER_OTLP_HEADERS")
	}
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" {
		return "", l.bad(v, "must be the http or https URL of an OTLP/HTTP receiver, such as http://localhost:4318, without user, query or fragment; got '%s'", v.text)
	}
	return v.text, nil
}

// timezone reads Timezone, an IANA zone name.
func (l *loader) timezone(f *fields, o *Orchestration) error {
	v, err := f.get("Timezone")
	if err != nil {
		return err
	}
	o.Timezone, o.Location = DefaultTimezone, time.UTC
	if !v.set {
		return nil
	}
	loc, loadErr := time.LoadLocation(v.text)
	if loadErr != nil || strings.EqualFold(v.text, "local") {
		return l.bad(v, "must be an IANA time zone name, such as UTC or Europe/Berlin; got '%s'", v.text)
	}
	o.Timezone, o.Location = v.text, loc
	return nil
}

// emailKeys are the settings of the Email block; smtpOnly are refused with
// the sendmail transport.
var (
	emailKeys = []string{
		"transport", "host", "port", "from_address", "from_name", "auth_mode", "user", "secret",
		"client_id", "token_url", "scope", "use_tls", "tls_mode", "ca_file", "sendmail_path",
	}
	smtpOnly = []string{
		"host", "port", "auth_mode", "user", "secret", "client_id", "token_url", "scope",
		"use_tls", "tls_mode", "ca_file",
	}
)

// email reads and validates the Email block.
func (l *loader) email(f *fields) (*Email, error) {
	if err := f.unknown(emailKeys); err != nil {
		return nil, err
	}
	e := &Email{}
	var err error
	if e.Transport, err = f.choice("transport", "smtp", "smtp", "sendmail"); err != nil {
		return nil, err
	}
	from, err := f.required("from_address")
	if err != nil {
		return nil, err
	}
	e.FromAddress = from.text
	if e.FromName, err = f.text("from_name"); err != nil {
		return nil, err
	}
	if e.Transport == "sendmail" {
		var written []string
		for _, k := range smtpOnly {
			if f.has(k) {
				written = append(written, k)
			}
		}
		if len(written) > 0 {
			return nil, l.fail(f.line, f.where, "sends through sendmail, so %s would be ignored; remove them, or set transport: smtp",
				strings.Join(written, ", "))
		}
		e.SendmailPath, err = f.path("sendmail_path", DefaultSendmailPath)
		return e, err
	}
	if f.has("sendmail_path") {
		v, _ := f.get("sendmail_path")
		return nil, l.fail(v.line(), v.path, "applies only with transport: sendmail")
	}
	return e, l.smtp(f, e)
}

// smtp reads the SMTP relay's settings of the Email block.
func (l *loader) smtp(f *fields, e *Email) error {
	host, err := f.required("host")
	if err != nil {
		return err
	}
	e.Host = host.text
	if !f.has("port") {
		return l.fail(f.line, f.where, "needs port (1 to 65535) with transport smtp")
	}
	if e.Port, err = f.number("port", 0, 1, 65535); err != nil {
		return err
	}
	if e.AuthMode, err = f.choice("auth_mode", "none", "none", "password", "oauth"); err != nil {
		return err
	}
	needs := map[string][]string{
		"none":     nil,
		"password": {"user", "secret"},
		"oauth":    {"user", "client_id", "secret", "token_url"},
	}[e.AuthMode]
	auth, err := f.auth(e.AuthMode, needs, "secret")
	if err != nil {
		return err
	}
	e.User, e.SecretVar, e.ClientID, e.TokenURL, e.Scope = auth.User, auth.SecretVar, auth.ClientID, auth.TokenURL, auth.Scope
	useTLS, err := f.boolean("use_tls")
	if err != nil {
		return err
	}
	legacy := "starttls"
	if useTLS != nil && !*useTLS {
		legacy = "none"
	}
	if e.TLSMode, err = f.choice("tls_mode", legacy, "none", "starttls", "ssl"); err != nil {
		return err
	}
	if useTLS != nil && f.has("tls_mode") && *useTLS != (e.TLSMode != "none") {
		v, _ := f.get("tls_mode")
		return l.fail(v.line(), v.path, "is %s, which disagrees with use_tls: %t; remove use_tls when setting tls_mode", e.TLSMode, *useTLS)
	}
	if e.CAFile, err = f.path("ca_file", ""); err != nil {
		return err
	}
	if e.CAFile != "" && e.TLSMode == "none" {
		v, _ := f.get("ca_file")
		return l.fail(v.line(), v.path, "would be ignored with tls_mode none; set tls_mode to starttls or ssl, or remove ca_file")
	}
	return nil
}

// auth reads the auth fields a mode uses. needs lists the fields the mode
// requires; "secret" there stands for secretKey, the field naming the secret
// variable (secret, or token in Databricks' and Snowflake's own fields). Every
// other field is read when written; relative key and certificate paths are
// made absolute.
func (f *fields) auth(mode string, needs []string, secretKey string) (Auth, error) {
	a := Auth{AuthMode: mode}
	var err error
	for _, k := range needs {
		if k == "secret" {
			k = secretKey
		}
		if !f.has(k) {
			if k == secretKey {
				k += " (the name of the variable holding the secret)"
			}
			return a, f.l.fail(f.line, f.where, "needs %s for auth_mode %s", k, mode)
		}
	}
	if a.SecretVar, err = f.secret(secretKey); err != nil {
		return a, err
	}
	texts := []struct {
		key  string
		into *string
		path bool
	}{
		{"user", &a.User, false}, {"key_file", &a.KeyFile, true}, {"cert_file", &a.CertFile, true},
		{"client_id", &a.ClientID, false}, {"token_url", &a.TokenURL, false}, {"scope", &a.Scope, false},
		{"issuer", &a.Issuer, false}, {"region", &a.Region, false}, {"role_arn", &a.RoleARN, false},
	}
	for _, t := range texts {
		if !f.has(t.key) {
			continue
		}
		if t.path {
			*t.into, err = f.path(t.key, "")
		} else {
			*t.into, err = f.text(t.key)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}
