package warehouse

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/youmark/pkcs8"

	"github.com/etl-craft/etl-craft/internal/warehouse/protocoltest"
)

// snowflakeService answers the Snowflake connector's protocol on a local TLS
// server: a login request (checked for the authenticator, the secret and the
// session parameters) that opens a session, then query requests carrying the
// session token, answered as JSON row sets.
type snowflakeService struct {
	srv     tlsServer
	logins  record[snowflakeLogin]
	queries record[snowflakeQuery]
}

type snowflakeLogin struct {
	query url.Values
	data  map[string]any
}

type snowflakeQuery struct {
	SQLText  string                     `json:"sqlText"`
	Bindings map[string]json.RawMessage `json:"bindings"`
}

func newSnowflakeService(t *testing.T) *snowflakeService {
	s := &snowflakeService{}
	s.srv = serveTLS(t, s.serve)
	return s
}

func (s *snowflakeService) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	ok := func(data any) { json.NewEncoder(w).Encode(map[string]any{"data": data, "success": true}) }
	switch r.URL.Path {
	case "/session/v1/login-request":
		var req struct {
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(protocoltest.Body(r), &req)
		s.logins.add(snowflakeLogin{query: r.URL.Query(), data: req.Data})
		ok(map[string]any{
			"token": "session-token", "masterToken": "master-token", "sessionId": 7,
			"validityInSeconds": 3600, "masterValidityInSeconds": 14400,
			"sessionInfo": map[string]string{"databaseName": "ANALYTICS", "schemaName": "ETL_CRAFT", "warehouseName": "LOAD_WH", "roleName": "LOADER"},
		})
	case "/queries/v1/query-request":
		if r.Header.Get("Authorization") != `Snowflake Token="session-token"` {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var q snowflakeQuery
		json.Unmarshal(protocoltest.Body(r), &q)
		n := s.queries.add(q)
		fixed := func(name string) map[string]any {
			return map[string]any{"name": name, "type": "fixed", "precision": 19, "scale": 0, "nullable": false}
		}
		data := map[string]any{"queryId": "q" + strconv.Itoa(n), "queryResultFormat": "json"}
		switch {
		case strings.Contains(q.SQLText, "information_schema.schemata"):
			n := "0"
			if b, ok := q.Bindings["1"]; ok && strings.Contains(strings.ToLower(string(b)), `"etl_craft"`) {
				n = "1"
			}
			data["rowtype"] = []any{fixed("COUNT(*)")}
			data["rowset"] = [][]*string{{&n}}
			data["total"], data["returned"] = 1, 1
		case strings.HasPrefix(q.SQLText, "INSERT"):
			n := strconv.Itoa(len(q.Bindings) / len(loadColumns))
			data["rowtype"] = []any{fixed("number of rows inserted")}
			data["rowset"] = [][]*string{{&n}}
			data["total"], data["returned"] = 1, 1
			data["statementTypeId"] = 0x3100
		default:
			data["rowtype"] = []any{}
			data["rowset"] = [][]*string{}
			data["statementTypeId"] = 0x6000
		}
		ok(data)
	default:
		ok(map[string]any{})
	}
}

func (s *snowflakeService) options(mode AuthMode) Options {
	return Options{
		Kind: Snowflake, TableFormat: Iceberg,
		Storage: Storage{ExternalVolume: "lake_volume", BaseLocation: "etl_craft/"},
		Account: "xy12345.snowflakecomputing.com", User: "loader", Catalog: "ANALYTICS", Schema: "ETL_CRAFT",
		Warehouse: "LOAD_WH", Role: "LOADER", AuthMode: mode, Host: s.srv.host, Port: s.srv.port,
		Password:   func() (string, error) { return "pat-or-password", nil },
		HTTPClient: s.srv.Client(),
	}
}

func TestSnowflakeConnectorProtocol(t *testing.T) {
	t.Parallel()
	svc := newSnowflakeService(t)
	ctx := context.Background()
	w, err := Open(ctx, svc.options(AuthToken))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Name() != "snowflake_iceberg" || strings.Contains(w.String(), "pat-or-password") ||
		w.String() != "snowflake:xy12345.snowflakecomputing.com/?db=ANALYTICS&schema=ETL_CRAFT&warehouse=LOAD_WH&role=LOADER" {
		t.Fatalf("%s: %s", w.Name(), w.String())
	}
	ok, err := w.SchemaExists(ctx, "etl_craft")
	if err != nil || !ok {
		t.Fatalf("SchemaExists = %v, %v", ok, err)
	}
	login := svc.logins.all()[0]
	for k, want := range map[string]string{"databaseName": "ANALYTICS", "schemaName": "ETL_CRAFT", "warehouse": "LOAD_WH", "roleName": "LOADER"} {
		if got := login.query.Get(k); got != want {
			t.Errorf("login %s = %q, want %q", k, got, want)
		}
	}
	params, _ := login.data["SESSION_PARAMETERS"].(map[string]any)
	if login.data["AUTHENTICATOR"] != "PROGRAMMATIC_ACCESS_TOKEN" || login.data["TOKEN"] != "pat-or-password" ||
		login.data["LOGIN_NAME"] != "loader" || login.data["ACCOUNT_NAME"] != "xy12345" || params["TIMEZONE"] != "UTC" {
		t.Fatalf("login request %v", login.data)
	}

	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tbl := w.Table("ETL_CRAFT", "CFG_PIPELINES")
	if _, err := tx.Exec(ctx, w.CreateTable(tbl, loadColumns)); err != nil {
		t.Fatal(err)
	}
	if n, err := tx.BulkLoad(ctx, tbl, loadColumns, sampleRows(50)); err != nil || n != 50 {
		t.Fatalf("BulkLoad = %d, %v", n, err)
	}
	var sent []string
	for _, q := range svc.queries.all() {
		sent = append(sent, q.SQLText)
	}
	joined := strings.Join(sent, "\n")
	for _, want := range []string{
		`CREATE ICEBERG TABLE "ANALYTICS"."ETL_CRAFT"."CFG_PIPELINES" ("ID" BIGINT, "FLAG" BOOLEAN, "AMOUNT" DECIMAL(38, 10), "DAY" DATE, "AT" TIMESTAMP_NTZ(6), "NOTE" VARCHAR) EXTERNAL_VOLUME = 'lake_volume' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'etl_craft/ANALYTICS.ETL_CRAFT.CFG_PIPELINES'`,
		Insert(w, tbl, loadColumns, RowsPerInsert(len(loadColumns))),
		Insert(w, tbl, loadColumns, 50-RowsPerInsert(len(loadColumns))),
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("never sent %s\nsent:\n%.2000s", want, joined)
		}
	}
}

// A password logs in as the user; an OAuth access token with the OAUTH
// authenticator.
func TestSnowflakeLogins(t *testing.T) {
	t.Parallel()
	for mode, want := range map[AuthMode]map[string]any{
		AuthPassword: {"PASSWORD": "pat-or-password", "TOKEN": nil, "LOGIN_NAME": "loader"},
		AuthOAuth:    {"AUTHENTICATOR": "OAUTH", "TOKEN": "pat-or-password", "PASSWORD": nil},
	} {
		svc := newSnowflakeService(t)
		w, err := Open(context.Background(), svc.options(mode))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		login := svc.logins.all()[0].data
		for k, v := range want {
			if login[k] != v {
				t.Errorf("%s: login %s = %v, want %v", mode, k, login[k], v)
			}
		}
	}
}

// A key_file login to Snowflake sends a JWT signed with the user's key
// (here encrypted PKCS#8, as Snowflake's guide makes it), whose subject is
// ACCOUNT.USER, with the SNOWFLAKE_JWT authenticator; a wrong passphrase
// fails the connection naming the key file, never the passphrase.
func TestSnowflakeKeyPair(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := pkcs8.MarshalPrivateKey(key, []byte("k3y-pass"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := newSnowflakeService(t)
	opts := svc.options(AuthKeyFile)
	opts.KeyFile = filepath.Join(t.TempDir(), "rsa_key.p8")
	if err := os.WriteFile(opts.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Password = func() (string, error) { return "k3y-pass", nil }
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	login := svc.logins.all()[0].data
	signed, _ := login["TOKEN"].(string)
	tok, err := jwt.Parse(signed, func(*jwt.Token) (any, error) { return &key.PublicKey, nil }, jwt.WithValidMethods([]string{"RS256"}))
	if err != nil || login["AUTHENTICATOR"] != "SNOWFLAKE_JWT" || login["PASSWORD"] != nil {
		t.Fatalf("login %v: %v", login, err)
	}
	if sub, _ := tok.Claims.GetSubject(); sub != "XY12345.LOADER" {
		t.Fatalf("subject %q", sub)
	}

	opts.Password = func() (string, error) { return "wr0ng-pass", nil }
	bad, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	err = bad.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "could not decrypt key_file "+opts.KeyFile) || strings.Contains(err.Error(), "wr0ng") {
		t.Fatalf("a wrong passphrase: %v", err)
	}
}

// An sts login is AWS workload identity federation: the login carries an
// STS GetCallerIdentity request signed with the environment's AWS
// credentials in its region, and no secret.
func TestSnowflakeWorkloadIdentity(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	svc := newSnowflakeService(t)
	opts := svc.options(AuthSTS)
	opts.Password = nil
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	login := svc.logins.all()[0].data
	raw, _ := login["TOKEN"].(string)
	decoded, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || login["AUTHENTICATOR"] != "WORKLOAD_IDENTITY" || login["PROVIDER"] != "AWS" || login["PASSWORD"] != nil {
		t.Fatalf("login %v: %v", login, err)
	}
	var signed struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(decoded, &signed); err != nil {
		t.Fatal(err)
	}
	if signed.URL != "https://sts.eu-west-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15" ||
		!strings.Contains(signed.Headers["Authorization"], "Credential=AKIDEXAMPLE/") ||
		strings.Contains(string(decoded), "wJalrXUtnFEMI") {
		t.Fatalf("attestation %s", decoded)
	}
}
