package enginetest

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Cluster is a PostgreSQL server of one test's own, which the test may stop
// and start again (a database outage), unlike the shared server of
// scripts/test.sh. It runs from initdb and pg_ctl in a temporary folder, on
// a free loopback port that stays its port across restarts; its superuser
// postgres logs in with the password Password. It is stopped and removed
// when the test ends.
type Cluster struct {
	t    testing.TB
	bin  string
	root string
	data string
	port int
	// as runs the server's commands as the postgres user when the test
	// runs as root (initdb refuses root).
	as []string
}

// Password is the superuser's password on every Cluster.
const Password = "etlcraft-cluster"

// NewCluster initialises and starts a cluster for the test. Without the
// PostgreSQL server binaries the test is skipped, unless CI is set, where it
// fails.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := serverBin()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("initdb and pg_ctl are not installed: CI must run the database outage tests (scripts/test.sh installs them)")
		}
		t.Skip("initdb and pg_ctl are not installed: run scripts/test.sh for the database outage tests")
	}
	// Not t.TempDir: the postgres user must reach the folder.
	root, err := os.MkdirTemp("", "etl-craft-cluster")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, root: root, data: filepath.Join(root, "data"), port: FreePort(t)}
	t.Cleanup(func() {
		c.command("pg_ctl", "-D", c.data, "-m", "immediate", "stop").Run()
		os.RemoveAll(root)
	})
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres").CombinedOutput(); err != nil {
				t.Fatalf("creating the postgres user: %v\n%s", err, out)
			}
		}
		if out, err := exec.Command("chown", "postgres", root).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v\n%s", root, err, out)
		}
		c.as = []string{"runuser", "-u", "postgres", "--"}
	}
	pwfile := filepath.Join(root, "pwfile")
	if err := os.WriteFile(pwfile, []byte(Password+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := c.command("initdb", "-D", c.data, "-U", "postgres", "--auth=scram-sha-256", "--pwfile="+pwfile,
		"-E", "UTF8", "--locale=C.UTF-8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Start()
	return c
}

// serverBin returns the folder of initdb and pg_ctl: ETL_CRAFT_TEST_PG_BIN,
// else the newest Debian PostgreSQL, else "".
func serverBin() string {
	dirs := []string{os.Getenv("ETL_CRAFT_TEST_PG_BIN")}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(found)))
	for _, d := range append(dirs, found...) {
		if d != "" && fileExists(filepath.Join(d, "initdb")) && fileExists(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	return ""
}

// FreePort returns a loopback port nothing listens on.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// command is one of the server's programs, run as its user.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, c.as...), filepath.Join(c.bin, name)), args...)
	return exec.Command(argv[0], argv[1:]...)
}

// Start starts the stopped server on its port and waits until it accepts
// connections.
func (c *Cluster) Start() {
	c.t.Helper()
	// Commits are synchronous: an immediate stop must lose no committed
	// transaction (fsync may be off: the machine does not crash).
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c full_page_writes=off",
		c.port, c.root)
	if out, err := c.command("pg_ctl", "-D", c.data, "-l", filepath.Join(c.root, "server.log"), "-w", "-t", "60", "-o", opts, "start").
		CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.root, "server.log"))
		c.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Stop stops the server at once, as a crash or a lost machine would
// (pg_ctl -m immediate): every connection is cut and nothing is accepted
// until Start.
func (c *Cluster) Stop() {
	c.t.Helper()
	if out, err := c.command("pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
		c.t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// Outage stops the server for d, then starts it again.
func (c *Cluster) Outage(d time.Duration) {
	c.t.Helper()
	c.Stop()
	time.Sleep(d)
	c.Start()
}

// Host is the server's address, 127.0.0.1:<port>.
func (c *Cluster) Host() string { return "127.0.0.1:" + strconv.Itoa(c.port) }

// URL returns the superuser's URL of a database of the cluster.
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres:%s@%s/%s?sslmode=disable", Password, c.Host(), database)
}

// NewDatabase creates a database on the cluster and returns its URL.
func (c *Cluster) NewDatabase(name string) string {
	c.t.Helper()
	db, err := sql.Open("pgx", c.URL("postgres"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		c.t.Fatalf("creating database %s: %v", name, err)
	}
	return c.URL(name)
}
