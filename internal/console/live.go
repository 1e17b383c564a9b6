package console

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// Pages stay live without a reload: each says which Engine DB tables it
// shows (data-watch) and opens one server-sent event stream (/events). The
// hub follows the engine's own change log, CLONE_CHANGES, which the Engine
// DB's triggers append to on every change of a run, a task, an attempt, a
// pause or an overseer, on SQLite and PostgreSQL alike: every PollEvery,
// while at least one page is open, it asks whether any of those tables
// changed since its last look (engine.ChangeLog's Mark and Since, the
// clone's own test), and if so tells every open page which. A page showing
// one of them fetches itself again and swaps the parts that differ.
//
// Each look's answer is a version: <boot>-<count>. A page is rendered with
// the version its reads are at least as new as, and the stream's first
// event gives the current one, so that a page that missed a change while it
// loaded, or while the server restarted (its boot differs), fetches itself
// once. The stream also checks the session every pingEvery: a session that
// ended sends the page to sign in.

// PollEvery is how often the hub looks for changes while a page is open.
const PollEvery = 500 * time.Millisecond

// pingEvery is how often a stream checks its session and tells the
// browser, and any proxy between, that it is alive.
const pingEvery = 15 * time.Second

// watchedTable is a table a page may watch, by the name pages use for it.
type watchedTable struct{ Name, Table string }

// watchedTables are the tables the hub follows.
var watchedTables = []watchedTable{
	{"runs", "AUD_PIPELINES_RUN_LOG"},
	{"tasks", "AUD_TASK_RUN_LOG"},
	{"attempts", "AUD_TASK_ATTEMPTS"},
	{"pauses", "AUD_PIPELINE_PAUSES"},
	{"overseers", "AUD_OVERSEERS"},
}

// change is what a stream tells its page.
type change struct {
	Version string   `json:"version"`
	Tables  []string `json:"tables"`
}

// hub follows the change log for the open pages' streams.
type hub struct {
	db   *engine.DB
	log  *slog.Logger
	boot string

	mu      sync.Mutex
	count   int64
	subs    map[chan change]struct{}
	running bool
}

// newHub returns the hub of an Engine DB.
func newHub(db *engine.DB, log *slog.Logger) *hub {
	return &hub{db: db, log: log, boot: strconv.FormatInt(time.Now().UnixNano(), 36), subs: map[chan change]struct{}{}}
}

// version is the hub's current version.
func (h *hub) version() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.versionLocked()
}

func (h *hub) versionLocked() string { return h.boot + "-" + strconv.FormatInt(h.count, 10) }

// subscribe adds a stream and returns its channel, which holds at most the
// latest change, and the function that removes it. The first stream starts
// the hub's look-out; it ends with the last.
func (h *hub) subscribe() (<-chan change, func()) {
	ch := make(chan change, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	if !h.running {
		h.running = true
		go h.watch()
	}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// watch looks for changes every PollEvery for as long as a stream is open.
// Its first look knows nothing of what happened while it did not watch, so
// it tells every stream that everything changed.
func (h *hub) watch() {
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	log := h.db.ChangeLog()
	mark := ""
	failing := false
	for {
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		next, tables, err := h.look(log, mark)
		switch {
		case err != nil && !failing:
			h.log.Warn("the console could not read the Engine DB's change log; its pages stay as they are until it can", "error", err)
			failing = true
		case err == nil:
			failing = false
			mark = next
			if len(tables) > 0 {
				h.publish(tables)
			}
		}
		<-t.C
	}
}

// look reads the change log's mark, and which watched tables changed since
// the mark before (all of them when there is none).
func (h *hub) look(log engine.ChangeLog, before string) (string, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*PollEvery)
	defer cancel()
	var mark string
	if err := h.db.QueryRowContext(ctx, log.Mark).Scan(&mark); err != nil {
		return "", nil, err
	}
	var changed []string
	for _, w := range watchedTables {
		if before != "" {
			var one int
			err := h.db.QueryRowContext(ctx, "SELECT 1 FROM CLONE_CHANGES WHERE "+log.Since+" LIMIT 1", w.Table, before).Scan(&one)
			if engine.IsNoRows(err) {
				continue
			}
			if err != nil {
				return "", nil, err
			}
		}
		changed = append(changed, w.Name)
	}
	return mark, changed, nil
}

// publish moves the version on and tells every stream which tables
// changed; a stream that has not taken the last change yet gets both in
// one.
func (h *hub) publish(tables []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count++
	c := change{Version: h.versionLocked(), Tables: tables}
	for ch := range h.subs {
		next := c
		select {
		case old := <-ch:
			next.Tables = union(old.Tables, c.Tables)
		default:
		}
		ch <- next
	}
}

// union returns the names in a or b, once each.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// events is a page's stream of changes (text/event-stream).
func (c *Console) events(w http.ResponseWriter, r *http.Request, _ *session) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	ch, cancel := c.hub.subscribe()
	defer cancel()
	send := func(event string, data any) bool {
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// A lost stream is opened again a second later.
	fmt.Fprint(w, "retry: 1000\n")
	if !send("hello", change{Version: c.hub.version()}) {
		return
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case next := <-ch:
			if !send("change", next) {
				return
			}
		case <-ping.C:
			if still, err := findSession(r.Context(), c.p.DB, r); err == nil && still == nil {
				send("signout", "")
				return
			}
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
