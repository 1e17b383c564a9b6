package warehouse

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// coordinator is a Trino coordinator's client protocol on a local TLS
// server: POST /v1/statement starts a query, whose first answer is queued
// and points at the next page (nextUri); GET of that page finishes with the
// columns and rows. It records every statement with its headers.
type coordinator struct {
	srv  tlsServer
	sent record[trinoCall]
}

type trinoCall struct {
	query  string
	header http.Header
	peer   string // the common name of the client's certificate, if any
}

func newCoordinator(t *testing.T) *coordinator {
	c := &coordinator{}
	c.srv = serveTLS(t, c.serve)
	return c
}

func (c *coordinator) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/statement":
		body, _ := io.ReadAll(r.Body)
		call := trinoCall{query: string(body), header: r.Header.Clone()}
		if certs := r.TLS.PeerCertificates; len(certs) > 0 {
			call.peer = certs[0].Subject.CommonName
		}
		n := c.sent.add(call)
		json.NewEncoder(w).Encode(map[string]any{
			"id": "q" + strconv.Itoa(n), "nextUri": c.srv.URL + "/v1/statement/executing/q" + strconv.Itoa(n) + "/1",
			"stats": map[string]any{"state": "QUEUED"},
		})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/statement/executing/"):
		sent := c.sent.all()
		json.NewEncoder(w).Encode(c.finish(sent[len(sent)-1]))
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// finish answers the last page of a query by what it is.
func (c *coordinator) finish(call trinoCall) map[string]any {
	done := map[string]any{"id": "q", "stats": map[string]any{"state": "FINISHED"}}
	prepared := call.header.Get("X-Trino-Prepared-Statement")
	switch {
	case strings.Contains(prepared, "system.metadata.catalogs"):
		done["columns"] = []map[string]any{{"name": "connector_name", "type": "varchar", "typeSignature": map[string]any{"rawType": "varchar", "arguments": []any{}}}}
		name := strings.TrimSuffix(strings.TrimPrefix(call.query, "EXECUTE _trino_go USING '"), "'")
		if connector, ok := trinoCatalogs[name]; ok {
			done["data"] = [][]any{{connector}}
		}
	case strings.Contains(prepared, "information_schema.schemata"):
		n := 0
		if strings.Contains(strings.ToLower(call.query), "'etl_craft'") {
			n = 1
		}
		done["columns"] = []map[string]any{{"name": "_col0", "type": "bigint", "typeSignature": map[string]any{"rawType": "bigint", "arguments": []any{}}}}
		done["data"] = [][]any{{n}}
	case strings.Contains(prepared, "INSERT+INTO"):
		done["updateType"] = "INSERT"
		done["updateCount"] = strings.Count(call.query, "TIMESTAMP") / 2
	default:
		done["updateType"] = "CREATE TABLE"
	}
	return done
}

// trinoCatalogs are the catalogs the coordinator has, with their connectors.
var trinoCatalogs = map[string]string{"iceberg": "iceberg", "lake": "hive"}

func (c *coordinator) options(mode AuthMode, reads *int) Options {
	return Options{
		Kind: Trino, TableFormat: Iceberg, Host: c.srv.host, Port: c.srv.port, User: "alice",
		Catalog: "iceberg", Schema: "etl_craft", AuthMode: mode,
		Password:   func() (string, error) { *reads++; return "s3cret", nil },
		HTTPClient: c.srv.Client(),
	}
}

func TestTrinoClientProtocol(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := context.Background()
	reads := 0
	w, err := Open(ctx, coord.options(AuthPassword, &reads))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if strings.Contains(w.String(), "s3cret") || !strings.HasPrefix(w.String(), "trino:https://alice@127.0.0.1:") {
		t.Fatalf("String() = %s", w.String())
	}
	ok, err := w.SchemaExists(ctx, "ETL_CRAFT")
	if err != nil || !ok {
		t.Fatalf("SchemaExists = %v, %v", ok, err)
	}
	if reads == 0 {
		t.Fatal("the password was never read")
	}
	call := coord.sent.all()[0]
	for h, want := range map[string]string{
		"X-Trino-User": "alice", "X-Trino-Catalog": "iceberg", "X-Trino-Schema": "etl_craft",
		"X-Trino-Time-Zone": "UTC", "X-Trino-Source": "etl-craft",
		"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")),
	} {
		if got := call.header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	stmt, _ := url.QueryUnescape(strings.TrimPrefix(call.header.Get("X-Trino-Prepared-Statement"), "_trino_go="))
	q, _ := w.schemaQuery("iceberg", "ETL_CRAFT")
	if stmt != q || call.query != "EXECUTE _trino_go USING 'ETL_CRAFT'" {
		t.Fatalf("prepared %q, executed %q", stmt, call.query)
	}

	// Bulk loads are INSERTs with every value cast to its column type.
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tbl := w.Table("etl_craft", "LOADED")
	if n, err := tx.BulkLoad(ctx, tbl, loadColumns, sampleRows(50)); err != nil || n != 50 {
		t.Fatalf("BulkLoad = %d, %v", n, err)
	}
	calls := coord.sent.all()
	inserts := calls[len(calls)-2:]
	stmt, _ = url.QueryUnescape(strings.TrimPrefix(inserts[0].header.Get("X-Trino-Prepared-Statement"), "_trino_go="))
	if stmt != Insert(w, tbl, loadColumns, RowsPerInsert(len(loadColumns))) {
		t.Fatalf("prepared INSERT %s", stmt)
	}
	first := inserts[0].query
	if !strings.HasPrefix(first, "EXECUTE _trino_go USING 0, true, '-50000.0000000000', TIMESTAMP '2020-01-01 00:00:00 Z', TIMESTAMP '2024-02-29 18:29:59 Z', 'row 0: it''s \"quoted\"") ||
		!strings.Contains(first, ", 1, NULL, NULL, TIMESTAMP '2020-01-02 00:00:00 Z'") {
		t.Fatalf("executed %.300s", first)
	}
}

// A token, stored (token) or minted by Password (oauth), is sent as a
// bearer token.
func TestTrinoToken(t *testing.T) {
	t.Parallel()
	for _, mode := range []AuthMode{AuthToken, AuthOAuth} {
		coord := newCoordinator(t)
		reads := 0
		w, err := Open(context.Background(), coord.options(mode, &reads))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		tx, err := w.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(context.Background(), w.CreateTable(w.Table("etl_craft", "T"), loadColumns)); err != nil {
			t.Fatal(err)
		}
		call := coord.sent.all()[0]
		if got := call.header.Get("Authorization"); got != "Bearer s3cret" {
			t.Fatalf("%s: Authorization %q", mode, got)
		}
		if call.query != `CREATE TABLE "iceberg"."etl_craft"."T" ("ID" BIGINT, "FLAG" BOOLEAN, "AMOUNT" DECIMAL(38, 10), "DAY" DATE, "AT" TIMESTAMP(6) WITH TIME ZONE, "NOTE" VARCHAR)` {
			t.Fatalf("sent %s", call.query)
		}
	}
}

// The doctor's Warehouse catalog check: the catalog must exist and be served
// by the iceberg connector.
func TestTrinoCatalogCheck(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := context.Background()
	for _, c := range []struct{ catalog, want string }{
		{"iceberg", ""},
		{"lake", "the catalog lake uses Trino's hive connector: etl-craft writes Iceberg tables, so name a catalog of the iceberg connector"},
		{"missing", "the catalog missing does not exist in Trino: name an Iceberg catalog in the Warehouse settings"},
	} {
		reads := 0
		opts := coord.options(AuthPassword, &reads)
		opts.Catalog = c.catalog
		w, err := Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckTrinoCatalog(ctx, w)
		w.Close()
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("catalog %s: %v, want %q", c.catalog, err, c.want)
		}
	}
	// Other warehouses have no catalog to check.
	if err := CheckTrinoCatalog(ctx, openReal(t, DuckDB)); err != nil {
		t.Errorf("DuckDB: %v", err)
	}
	calls := coord.sent.all()
	stmt, _ := url.QueryUnescape(strings.TrimPrefix(calls[0].header.Get("X-Trino-Prepared-Statement"), "_trino_go="))
	if stmt != "SELECT connector_name FROM system.metadata.catalogs WHERE catalog_name = ?" || len(calls) != 3 {
		t.Errorf("asked %q, %d calls", stmt, len(calls))
	}
}

// A key_file login presents its client certificate on every request, and
// sends no Authorization header.
func TestTrinoClientCertificate(t *testing.T) {
	t.Parallel()
	coord := &coordinator{}
	coord.srv = serveTLSWith(t, coord.serve, tls.RequireAnyClientCert)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etl-craft-loader"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	opts := coord.options(AuthKeyFile, &reads)
	opts.Password = nil
	opts.ClientCert = func() (tls.Certificate, error) {
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
	}
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ok, err := w.SchemaExists(context.Background(), "etl_craft"); err != nil || !ok {
		t.Fatalf("SchemaExists = %v, %v", ok, err)
	}
	call := coord.sent.all()[0]
	if call.peer != "etl-craft-loader" || call.header.Get("Authorization") != "" {
		t.Fatalf("client certificate %q, Authorization %q", call.peer, call.header.Get("Authorization"))
	}

	// A key_file login without its certificate is refused before connecting.
	opts.ClientCert = nil
	if _, err := Open(context.Background(), opts); !exit.Is(err, exit.Configuration) {
		t.Fatalf("key_file without a certificate: %v", err)
	}
}
