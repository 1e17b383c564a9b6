package notify_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
	"github.com/etl-craft/etl-craft/internal/report"
)

// send delivers the test message to the channel of n and returns the
// delivery and the log.
func send(t *testing.T, n *notify.Notifier, name string) (notify.Delivery, string) {
	t.Helper()
	log, buf := logger()
	d := n.Send(context.Background(), log, message(3, "boom"), []string{name})
	if len(d) != 1 {
		t.Fatalf("%d deliveries", len(d))
	}
	if strings.Contains(buf.String(), secretPath) || (d[0].Err != nil && strings.Contains(d[0].Err.Error(), secretPath)) {
		t.Errorf("the URL's secret part is shown:\n%v\n%s", d[0].Err, buf.String())
	}
	return d[0], buf.String()
}

// A 429 is tried again after its Retry-After, a 503 after a growing wait;
// a 400 is final; a channel that keeps failing is tried Retries more times;
// a Retry-After past MaxRetryAfter and a redirect end the delivery.
func TestRetriesFollowTheAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		retries int
		script  []notifytest.Reply
		tries   int
		ok      bool
		log     []string
		err     string
	}{
		{"429 with Retry-After", 3, []notifytest.Reply{{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: "rate_limited"}}, 2, true,
			[]string{`msg="the channel did not take the alert; trying again"`, "after=1s retry_after=true", `msg="delivered to the channel"`, "try=2"}, ""},
		{"503 twice", 3, []notifytest.Reply{{Status: 503}, {Status: 503}}, 3, true,
			[]string{"after=10ms retry_after=false", "after=20ms retry_after=false", "status=200 try=3"}, ""},
		{"400 is final", 3, []notifytest.Reply{{Status: 400, Body: "invalid_payload"}}, 1, false,
			[]string{`msg="the channel did not take the alert"`}, "answered 400 Bad Request: invalid_payload"},
		{"503 until no tries are left", 2, []notifytest.Reply{{Status: 503}, {Status: 502}, {Status: 500, Body: "rollup_error"}, {Status: 200}}, 3, false,
			[]string{"no tries left", "retries=2"}, "answered 500 Internal Server Error: rollup_error"},
		{"a Retry-After of an hour", 3, []notifytest.Reply{{Status: 429, Header: map[string]string{"Retry-After": "3600"}}}, 1, false,
			nil, "it asks to wait 1h0m0s (Retry-After), more than the 1m0s a delivery waits"},
		{"a redirect", 3, []notifytest.Reply{{Status: 302, Header: map[string]string{"Location": "https://elsewhere.example/"}}}, 1, false,
			nil, "answered 302 Found: etl-craft follows no redirect"},
		{"an answer quoting the URL", 0, []notifytest.Reply{{Status: 500, Body: "no route for " + secretPath}}, 1, false,
			nil, "answered 500 Internal Server Error: no route for …"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := notifytest.Start(t, c.script...)
			n, _ := notifier(c.retries, channel{name: "data-team", kind: config.ChannelSlack, r: r})
			d, log := send(t, n, "data-team")
			if d.Tries != c.tries || len(r.Got()) != c.tries || (d.Err == nil) != c.ok {
				t.Fatalf("%d tries, %d requests, error %v; want %d tries, delivered %v\n%s", d.Tries, len(r.Got()), d.Err, c.tries, c.ok, log)
			}
			if c.err != "" && !strings.Contains(d.Err.Error(), c.err) {
				t.Errorf("error %q lacks %q", d.Err, c.err)
			}
			for _, want := range c.log {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			for _, req := range r.Got() {
				if req.Path != secretPath || req.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
					len(req.Header.Get(notify.HeaderDelivery)) != 32 {
					t.Errorf("request %s %v", req.Path, req.Header)
				}
			}
			if ids := r.Got(); len(ids) > 1 && ids[0].Header.Get(notify.HeaderDelivery) != ids[len(ids)-1].Header.Get(notify.HeaderDelivery) {
				t.Errorf("the tries of one delivery have different ids")
			}
		})
	}
}

// A channel that does not answer at all is tried again, and the error names
// its host only.
func TestNoAnswerIsTriedAgain(t *testing.T) {
	t.Parallel()
	r := notifytest.Start(t)
	n, _ := notifier(1, channel{name: "pager", kind: config.ChannelWebhook, r: r})
	r.Close()
	d, log := send(t, n, "pager")
	if d.Tries != 2 || d.Err == nil || !strings.Contains(d.Err.Error(), "no answer from "+r.URL+"/…: ") || !strings.Contains(log, "no tries left") {
		t.Fatalf("%d tries, %v\n%s", d.Tries, d.Err, log)
	}
}

// The webhook's signature is checked by a receiver of its own, written in
// Python from what docs/alerts.md says: it takes the signed document, and
// refuses one signed with another secret (a 401, which is not retried).
func TestWebhookSignaturesVerifyInAnIndependentReceiver(t *testing.T) {
	t.Parallel()
	const secret = "whsec-3f1c9a7e5d2b4680"
	cmd := exec.Command("python3", "testdata/receiver.py")
	cmd.Env = append(cmd.Environ(), "RECEIVER_SECRET="+secret)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("the receiver printed no port")
	}
	port := strings.TrimPrefix(lines.Text(), "port ")
	url := "http://127.0.0.1:" + port + "/etl-alerts"
	signed := func(secret string) notify.Delivery {
		vars := env{"PAGER_URL": url, "PAGER_SIGNING": secret}
		n := notify.New(config.Notifications{TimeoutSeconds: 5, Retries: 2, Channels: []config.Channel{
			{Name: "pager", Kind: config.ChannelWebhook, URLVar: "PAGER_URL", SigningSecretVar: "PAGER_SIGNING"}}}, vars.secret)
		log, _ := logger()
		return n.Send(context.Background(), log, message(3, "boom"), []string{"pager"})[0]
	}
	var seen struct {
		Verified bool
		Delivery string
		Event    string
		Subject  string
	}
	d := signed(secret)
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &seen) != nil {
		t.Fatalf("the receiver printed %q", lines.Text())
	}
	if d.Err != nil || d.Status != http.StatusNoContent || !seen.Verified || seen.Event != "run_alert" || seen.Subject != "[FAILED] SALES run 42" ||
		seen.Delivery != notify.DeliveryID(message(3, "boom"), "pager") {
		t.Fatalf("delivery %v, the receiver saw %+v", d, seen)
	}
	d = signed("another secret")
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &seen) != nil || seen.Verified {
		t.Fatalf("a wrong signature: the receiver printed %q", lines.Text())
	}
	if d.Err == nil || d.Tries != 1 || !strings.Contains(d.Err.Error(), "answered 401 Unauthorized") {
		t.Fatalf("a refused signature: %v", d)
	}
}

// The signature is HMAC-SHA256 over the timestamp, ".", and the exact body
// sent, and a webhook without a signing secret carries no signature.
func TestTheWebhookDocumentAndItsHeaders(t *testing.T) {
	t.Parallel()
	signedR, plainR := notifytest.Start(t), notifytest.Start(t)
	n, _ := notifier(0, channel{name: "signed", kind: config.ChannelWebhook, r: signedR, signing: "k3y-for-signing"},
		channel{name: "plain", kind: config.ChannelWebhook, r: plainR})
	log, _ := logger()
	for _, d := range n.Send(context.Background(), log, message(3, "boom"), []string{"signed", "plain"}) {
		if d.Err != nil {
			t.Fatal(d)
		}
	}
	req := signedR.Got()[0]
	mac := hmac.New(sha256.New, []byte("k3y-for-signing"))
	mac.Write([]byte(req.Header.Get(notify.HeaderTimestamp) + "." + string(req.Body)))
	if want := "v1=" + hex.EncodeToString(mac.Sum(nil)); req.Header.Get(notify.HeaderSignature) != want {
		t.Errorf("signature %q, want %q", req.Header.Get(notify.HeaderSignature), want)
	}
	if ts, err := strconv.ParseInt(req.Header.Get(notify.HeaderTimestamp), 10, 64); err != nil || ts <= 0 {
		t.Errorf("timestamp %q", req.Header.Get(notify.HeaderTimestamp))
	}
	if p := plainR.Got()[0]; p.Header.Get(notify.HeaderSignature) != "" || p.Header.Get(notify.HeaderTimestamp) != "" {
		t.Errorf("an unsigned webhook carries %v", p.Header)
	}
	var doc report.Notification
	if err := json.Unmarshal(req.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "etl-craft/notification/1" || doc.Event != "run_alert" || doc.Channel != "signed" || *doc.Outcome != "FAILED" ||
		doc.Run.ID != 42 || doc.Run.Schema != "etl-craft/run/1" || len(doc.Tasks) != 3 || *doc.Tasks[0].ErrorMessage != "boom" ||
		doc.Tasks[1].ErrorMessage != nil || *doc.ConsoleURL != "https://etl.example.com/runs/42" || doc.SLA != nil ||
		doc.DeliveryID != req.Header.Get(notify.HeaderDelivery) || !strings.Contains(doc.Text, "Errors:\n  task_0: boom") {
		t.Errorf("document %+v", doc)
	}
	if doc.DeliveryID == plainR.Got()[0].Header.Get(notify.HeaderDelivery) {
		t.Error("two channels share a delivery id")
	}
	// The id is what the alert says, whatever the console's address.
	moved := message(3, "boom")
	moved.Link = "http://127.0.0.1:9/runs/42"
	if notify.DeliveryID(moved, "signed") != doc.DeliveryID || notify.DeliveryID(message(3, "bang"), "signed") == doc.DeliveryID {
		t.Error("the delivery id depends on the link, or not on the alert")
	}
}
