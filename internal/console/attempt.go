package console

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The attempt page: an attempt and its log as it is written, followed live
// while the attempt runs (its script asks /attempts/{id}/log for what was
// written since), and downloaded whole.

// PageLogBytes is the most of a log's end the attempt page shows at first;
// the download has all of it.
const PageLogBytes = 1 << 20

// followBytes is the most bytes one read of a followed log returns.
const followBytes = 256 << 10

// attemptBody is the attempt page.
type attemptBody struct {
	Attempt report.Attempt
	State   statusView
	Task    records.TaskRun
	// Active is set while the attempt may still write its log.
	Active bool
	// Log is the end of the log shown; From where it starts in the file.
	Log     string
	HasLog  bool
	From    int64
	Next    int64
	LogPath string
}

// attempt reads the attempt the request's path names; ok is false, and
// the page says why, when there is none.
func (c *Console) attempt(w http.ResponseWriter, r *http.Request, s *session) (a report.Attempt, ok bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		c.fail(w, r, s, exit.Errorf(exit.ResourceNotFound, "%q is no ATTEMPT_ID", r.PathValue("id")))
		return a, false
	}
	if a, err = inspect.AttemptByID(r.Context(), c.p.DB, id); err != nil {
		c.fail(w, r, s, err)
		return a, false
	}
	return a, true
}

// active reports whether an attempt status is not terminal.
func active(status string) bool {
	switch records.AttemptStatus(status) {
	case records.AttemptQueued, records.AttemptClaimed, records.AttemptRunning:
		return true
	}
	return false
}

func (c *Console) attemptPage(w http.ResponseWriter, r *http.Request, s *session) {
	a, ok := c.attempt(w, r, s)
	if !ok {
		return
	}
	ctx, id := r.Context(), a.AttemptID
	trs, err := records.QueryTaskRuns(ctx, c.p.DB, "SELECT "+records.TaskRunColumns+records.TaskRunsFrom+"WHERE tr.TASK_RUN_ID = $1", a.TaskRunID)
	if err == nil && len(trs) == 0 {
		err = exit.Errorf(exit.ResourceNotFound, "attempt %d has no task run", id)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	body := attemptBody{Attempt: a, State: statusOf(a.Status), Task: trs[0], Active: active(a.Status)}
	if a.LogPath != nil {
		body.LogPath = filepath.Base(*a.LogPath)
		if info, err := os.Stat(*a.LogPath); err == nil {
			doc, err := inspect.AttemptLog(ctx, c.p.DB, id, max(info.Size()-PageLogBytes, 0), PageLogBytes)
			if err == nil {
				text, next := wholeRunes(doc)
				body.HasLog, body.Log, body.From, body.Next = true, lines(text), doc.Offset, next
			}
		}
	}
	c.render(w, r, s, http.StatusOK, "attempt", "Attempt "+strconv.FormatInt(id, 10), "attempts", body)
}

// wholeRunes returns a part of a log without the incomplete character it
// may end with, and where the next read starts: there.
func wholeRunes(doc report.AttemptLog) (string, int64) {
	text := doc.Text
	cut := len(text)
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(text[i]) {
			if !utf8.FullRuneInString(text[i:]) {
				cut = i
			}
			break
		}
	}
	return text[:cut], doc.Offset + int64(cut)
}

// attemptLog answers the attempt's log: whole, as a download
// (?download=1), or for the page's script what was written from ?offset=
// on, with where to read next (X-Next-Offset) and whether the attempt may
// still write (X-Attempt-Active).
func (c *Console) attemptLog(w http.ResponseWriter, r *http.Request, s *session) {
	a, ok := c.attempt(w, r, s)
	if !ok {
		return
	}
	ctx, id := r.Context(), a.AttemptID
	if r.URL.Query().Get("download") != "" {
		c.download(w, r, s, id)
		return
	}
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err != nil || offset < 0 {
		offset = 0
	}
	w.Header().Set("X-Attempt-Active", strconv.FormatBool(active(a.Status)))
	doc, err := inspect.AttemptLog(ctx, c.p.DB, id, offset, followBytes)
	if exit.Is(err, exit.ResourceNotFound) && active(a.Status) {
		// Not started yet: nothing to read so far.
		w.Header().Set("X-Next-Offset", strconv.FormatInt(offset, 10))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	text, next := wholeRunes(doc)
	w.Header().Set("X-Next-Offset", strconv.FormatInt(next, 10))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(lines(text)))
}

// download sends the whole log file, as it is, as an attachment.
func (c *Console) download(w http.ResponseWriter, r *http.Request, s *session, id int64) {
	f, _, err := inspect.OpenAttemptLog(r.Context(), c.p.DB, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="attempt-`+strconv.FormatInt(id, 10)+`.log"`)
	http.ServeContent(w, r, "", info.ModTime(), f)
}
