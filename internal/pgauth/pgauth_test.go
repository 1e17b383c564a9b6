package pgauth

import (
	"net/url"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// The sts mode builds an RDS IAM token: a SigV4-presigned connect request
// for the user at the server, signed with the environment's AWS
// credentials in the profile's region, valid 15 minutes. A new one is
// built for each connection.
func TestSTSBuildsAnRDSIAMToken(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	password := Password(Login{Mode: ModeSTS, Host: "engine.abc.eu-west-1.rds.amazonaws.com", Port: 5432, User: "etl_craft", Region: "eu-west-1"})
	tok, err := password()
	if err != nil {
		t.Fatal(err)
	}
	host, query, ok := strings.Cut(tok, "?")
	if !ok || host != "engine.abc.eu-west-1.rds.amazonaws.com:5432" {
		t.Fatalf("token %q", tok)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	cred := strings.Split(q.Get("X-Amz-Credential"), "/")
	if q.Get("Action") != "connect" || q.Get("DBUser") != "etl_craft" || q.Get("X-Amz-Expires") != "900" ||
		len(cred) != 5 || cred[0] != "AKIDEXAMPLE" || cred[2] != "eu-west-1" || cred[3] != "rds-db" || q.Get("X-Amz-Signature") == "" {
		t.Fatalf("token query %v", q)
	}
	if strings.Contains(tok, "wJalrXUtnFEMI") {
		t.Fatal("the token holds the secret access key")
	}
}

// The secret modes send the secret itself; key_file sends no password, its
// secret being the key's passphrase; sso and unknown modes fail every
// connection with a configuration error.
func TestModes(t *testing.T) {
	secret := func() (string, error) { return "s3cret", nil }
	for _, m := range []string{"", ModePassword, ModeToken} {
		pw, err := Password(Login{Mode: m, Secret: secret})()
		if err != nil || pw != "s3cret" {
			t.Errorf("%q: %q, %v", m, pw, err)
		}
	}
	if Password(Login{Mode: ModePassword}) != nil {
		t.Error("a login without a secret sends a password")
	}
	if Password(Login{Mode: ModeKeyFile, Secret: secret}) != nil {
		t.Error("a key_file login sends a password")
	}
	for m, want := range map[string]string{
		ModeSSO:    "auth_mode sso is libpq's interactive OAuth device flow",
		"kerberos": "auth_mode kerberos is not a PostgreSQL auth mode",
	} {
		_, err := Password(Login{Mode: m, Secret: secret})()
		if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", m, err)
		}
	}
}
