package retention

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// runFolder is the folder of one run's attempt logs,
// <Log_dir>/<PIPELINE>/run-<PIPELINE_RUN_ID>.
var runFolder = regexp.MustCompile(`^run-([0-9]+)$`)

// keepsLogs is the condition on a run r that its attempts' log files stay,
// however old: it has not ended, or it is its pipeline's latest ended run.
var keepsLogs = "r.STATUS NOT IN (" + records.SQLEndedRuns + ") OR " + latestEnded

// oldLogs lists the attempt log files under dir last written before the
// logs' cut-off, but those of runs that keep them (keepsLogs). Only files
// in a run's folder are looked at; a run the Engine DB no longer has keeps
// none.
func oldLogs(ctx context.Context, db *engine.DB, dir string, cutoffs map[Kind]time.Time) ([]string, error) {
	cutoff, ok := cutoffs[Logs]
	if !ok || dir == "" {
		return nil, nil
	}
	byRun := map[int64][]string{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			return nil
		}
		m := runFolder.FindStringSubmatch(filepath.Base(filepath.Dir(path)))
		if m == nil {
			return nil
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			return err
		}
		run, _ := strconv.ParseInt(m[1], 10, 64)
		byRun[run] = append(byRun[run], path)
		return nil
	})
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not read the attempt logs under %s", dir)
	}
	runs := make([]int64, 0, len(byRun))
	for run := range byRun {
		runs = append(runs, run)
	}
	slices.Sort(runs)
	for part := range slices.Chunk(runs, chunk) {
		var a args
		q := "SELECT r.PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID " + a.list(part) + " AND (" + keepsLogs + ")"
		kept, err := engine.Strings(ctx, db, q, a...)
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read which runs keep their attempt logs")
		}
		for _, k := range kept {
			run, _ := strconv.ParseInt(k, 10, 64)
			delete(byRun, run)
		}
	}
	var out []string
	for _, run := range runs {
		out = append(out, byRun[run]...)
	}
	return out, nil
}

// removeFiles removes the files, and each run folder left empty, and
// returns how many files it removed; a file gone already is no error.
func removeFiles(files []string) (int64, error) {
	var n int64
	folders := map[string]bool{}
	for _, f := range files {
		err := os.Remove(f)
		switch {
		case err == nil:
			n++
		case !errors.Is(err, fs.ErrNotExist):
			return n, exit.Wrap(exit.Configuration, err, "could not remove the attempt log %s", f)
		}
		folders[filepath.Dir(f)] = true
	}
	for folder := range folders {
		if runFolder.MatchString(filepath.Base(folder)) {
			_ = os.Remove(folder) // only when empty
		}
	}
	return n, nil
}
