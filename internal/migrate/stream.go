// Package migrate applies the Engine DB's schema and migrations: init-db for
// an empty database, and migrate for the ENGINE stream packaged in the binary
// followed by the PROJECT stream of the team's own files. It keeps the
// SCHEMA_MIGRATIONS ledger, refuses edited or removed applied files, runs
// each file in one transaction together with its ledger row, and serializes
// runs with the MIGRATE lock.
package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/schema"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// Source names a migration stream.
type Source string

// The two migration streams, applied in this order.
const (
	Engine  Source = "ENGINE"
	Project Source = "PROJECT"
)

// The markers an ENGINE migration may carry.
const (
	// RebuildMetadata runs the file inside the dialect's guarded rebuild
	// transaction (SQLite table rebuilds that preserve ids and custom objects).
	RebuildMetadata = "rebuild-metadata"
	// CheckMetadataCodes checks every pipeline and task code before anything
	// pending is applied.
	CheckMetadataCodes = "check-metadata-codes"
)

var knownMarkers = []string{RebuildMetadata, CheckMetadataCodes}

// File is one migration file.
type File struct {
	Source   Source
	Name     string // the file's base name, which is its ledger VERSION
	Checksum string // lower-case hex SHA-256 of the file's exact bytes
	Text     string
	Markers  []string
	// Released maps each checksum a released build recorded for this ENGINE
	// file, where that build's bytes differ from this one's, to the build's
	// name (released-checksums.toml). PROJECT files have none.
	Released map[string]string
}

// Label names the file with its stream, as "engine/0001_x.sql".
func (f File) Label() string { return f.Source.label(f.Name) }

// label names a file of the stream, as "project/0004_x.sql".
func (s Source) label(name string) string { return strings.ToLower(string(s)) + "/" + name }

// recordedBy reports whether checksum is one a build recorded for the file in
// SCHEMA_MIGRATIONS: the file's own (release "") or a released build's, named
// by release.
func (f File) recordedBy(checksum string) (release string, ok bool) {
	if checksum == f.Checksum {
		return "", true
	}
	release, ok = f.Released[checksum]
	return release, ok
}

// HasMarker reports whether the file carries the marker.
func (f File) HasMarker(m string) bool {
	for _, x := range f.Markers {
		if x == m {
			return true
		}
	}
	return false
}

// Stream is the ordered files of one source.
type Stream struct {
	Source Source
	// Dir is where the files come from, for messages; empty when the PROJECT
	// stream is not configured.
	Dir   string
	Files []File
	// Ignored says, of each entry of the folder that looks like a migration
	// but is not read, what it is and why it is not read: a name ending in
	// .SQL in another case, a name starting NNNN_ with another ending, or a
	// *.sql entry that is not a regular file.
	Ignored []string
}

// Configured reports whether the stream has a folder.
func (s Stream) Configured() bool { return s.Dir != "" }

var markerLine = regexp.MustCompile(`(?m)^-- etl-craft: (.*)$`)

// EngineStream reads the dialect's packaged ENGINE migrations, with the
// markers of migration-markers.toml added to their header markers and the
// checksums of released-checksums.toml.
func EngineStream(kind engine.Kind) (Stream, error) {
	fsys, err := schema.Migrations(string(kind))
	if err != nil {
		return Stream{}, exit.Wrap(exit.Migration, err, "the packaged %s migrations are missing their SQL files", kind)
	}
	s, err := readStream(Engine, fsys, "the packaged "+string(kind)+" migrations")
	if err != nil {
		return Stream{}, err
	}
	extra, err := packagedMarkers()
	if err != nil {
		return Stream{}, err
	}
	for i := range s.Files {
		f := &s.Files[i]
		for marker, names := range extra {
			for _, n := range names {
				if n == f.Name && !f.HasMarker(marker) {
					f.Markers = append(f.Markers, marker)
				}
			}
		}
		sort.Strings(f.Markers)
		if err := checkMarkers(*f); err != nil {
			return Stream{}, err
		}
	}
	if err := addReleased(kind, &s); err != nil {
		return Stream{}, err
	}
	return s, nil
}

// releasedChecksums is the shape of a dialect's released-checksums.toml.
type releasedChecksums struct {
	Release []struct {
		Name      string            `toml:"name"`
		Checksums map[string]string `toml:"checksums"`
	} `toml:"release"`
}

var checksumText = regexp.MustCompile(`^[0-9a-f]{64}$`)

// addReleased gives each packaged file the checksums released builds
// recorded for it. Every entry must name a packaged file and hold a SHA-256
// in lower-case hex other than the file's own.
func addReleased(kind engine.Kind, s *Stream) error {
	b, err := schema.ReleasedChecksums(string(kind))
	if err != nil {
		return exit.Wrap(exit.Migration, err, "the packaged %s released-checksums.toml is missing", kind)
	}
	var doc releasedChecksums
	if _, err := toml.Decode(string(b), &doc); err != nil {
		return exit.Wrap(exit.Migration, err, "the packaged %s released-checksums.toml is invalid", kind)
	}
	byName := map[string]*File{}
	for i := range s.Files {
		byName[s.Files[i].Name] = &s.Files[i]
	}
	for _, rel := range doc.Release {
		for name, sum := range rel.Checksums {
			f := byName[name]
			switch {
			case rel.Name == "":
				return exit.Errorf(exit.Migration, "the packaged %s released-checksums.toml has a release without a name", kind)
			case f == nil:
				return exit.Errorf(exit.Migration, "the packaged %s released-checksums.toml names %s, which is not a packaged migration", kind, name)
			case !checksumText.MatchString(sum) || sum == f.Checksum:
				return exit.Errorf(exit.Migration,
					"the packaged %s released-checksums.toml gives %s of %s the checksum %q: want the 64 lower-case hex digits of a SHA-256 other than this build's file's",
					kind, name, rel.Name, sum)
			}
			if f.Released == nil {
				f.Released = map[string]string{}
			}
			f.Released[sum] = rel.Name
		}
	}
	return nil
}

// ProjectStream reads the PROJECT migrations in dir. An empty dir means no
// PROJECT stream. A folder named explicitly must exist.
func ProjectStream(dir string) (Stream, error) {
	if dir == "" {
		return Stream{Source: Project}, nil
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return Stream{}, exit.Fieldf(exit.Migration,
			"the project migrations directory %s does not exist — pass {migrations_dir} or set ETL_CRAFT_MIGRATIONS_DIR", dir)
	}
	s, err := readStream(Project, os.DirFS(dir), dir)
	if err != nil {
		return Stream{}, err
	}
	for _, f := range s.Files {
		if len(f.Markers) > 0 {
			return Stream{}, exit.Errorf(exit.Migration,
				"%s declares the marker(s) %s: markers are ENGINE-only and are refused in PROJECT migrations; remove the '-- etl-craft:' line",
				filepath.Join(dir, f.Name), strings.Join(f.Markers, ", "))
		}
	}
	return s, nil
}

// readStream reads every regular *.sql file directly in fsys, sorted by name.
func readStream(src Source, fsys fs.FS, where string) (Stream, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return Stream{}, exit.Wrap(exit.Migration, err, "could not read %s", where)
	}
	s := Stream{Source: src, Dir: where}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".sql") {
			if why := notRead(e); why != "" {
				s.Ignored = append(s.Ignored, filepath.Join(where, e.Name())+" "+why)
			}
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return Stream{}, exit.Wrap(exit.Migration, err, "could not read migration %s in %s", e.Name(), where)
		}
		if !utf8.Valid(b) {
			return Stream{}, exit.Errorf(exit.Migration, "could not read migration %s in %s: it is not UTF-8 text", e.Name(), where)
		}
		sum := sha256.Sum256(b)
		f := File{Source: src, Name: e.Name(), Checksum: hex.EncodeToString(sum[:]), Text: string(b)}
		for _, m := range markerLine.FindAllStringSubmatch(f.Text, -1) {
			f.Markers = append(f.Markers, strings.TrimSpace(m[1]))
		}
		s.Files = append(s.Files, f)
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Name < s.Files[j].Name })
	return s, nil
}

// notRead says why an entry that looks like a migration is not read, and
// "" for any other entry that is not read.
func notRead(e fs.DirEntry) string {
	name := e.Name()
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".sql") && e.IsDir():
		return "is not read: it is a folder, and only the *.sql files directly in the migrations folder are migrations"
	case strings.HasSuffix(lower, ".sql") && !e.Type().IsRegular():
		return "is not read: it is not a regular file (a symbolic link, say), and only regular *.sql files are migrations; put the file itself in the folder"
	case strings.HasSuffix(lower, ".sql"):
		return "is not read: only names ending in .sql, in lower case, are migrations; rename it to " +
			name[:len(name)-len(".sql")] + ".sql"
	case leadingNumber.MatchString(name) && !e.IsDir():
		return "is not read: its name starts like a migration's, but only names ending in .sql are migrations"
	}
	return ""
}

func packagedMarkers() (map[string][]string, error) {
	b, err := schema.Markers()
	if err != nil {
		return nil, exit.Wrap(exit.Migration, err, "the packaged migration-markers.toml is missing")
	}
	out := map[string][]string{}
	if _, err := toml.Decode(string(b), &out); err != nil {
		return nil, exit.Wrap(exit.Migration, err, "the packaged migration-markers.toml is invalid")
	}
	for m := range out {
		if !isKnownMarker(m) {
			return nil, exit.Errorf(exit.Migration, "migration-markers.toml names the unknown marker %q: use %s",
				m, strings.Join(knownMarkers, " or "))
		}
	}
	return out, nil
}

func checkMarkers(f File) error {
	var unknown []string
	for _, m := range f.Markers {
		if !isKnownMarker(m) {
			unknown = append(unknown, m)
		}
	}
	if len(unknown) > 0 {
		return exit.Errorf(exit.Migration, "%s declares unknown marker(s) %s: the markers are %s",
			f.Label(), strings.Join(unknown, ", "), strings.Join(knownMarkers, " and "))
	}
	return nil
}

func isKnownMarker(m string) bool {
	for _, k := range knownMarkers {
		if m == k {
			return true
		}
	}
	return false
}

// ledgerRow is one SCHEMA_MIGRATIONS row.
type ledgerRow struct {
	Source   Source
	Version  string
	Checksum string
}

func (r ledgerRow) label() string { return r.Source.label(r.Version) }

// verify checks every applied file against the streams: each must still be
// there, and its ledger checksum must be one a build recorded for it (see
// File.recordedBy). The first problem stops everything. It returns the
// released builds whose checksums the ledger holds, in ledger order.
func verify(ledger []ledgerRow, streams []Stream) ([]string, error) {
	var releases []string
	seen := map[string]bool{}
	for _, row := range ledger {
		var stream *Stream
		for i := range streams {
			if streams[i].Source == row.Source {
				stream = &streams[i]
			}
		}
		var file *File
		if stream != nil {
			for i := range stream.Files {
				if stream.Files[i].Name == row.Version {
					file = &stream.Files[i]
				}
			}
		}
		if file == nil && (stream == nil || !stream.Configured()) {
			return nil, exit.Fieldf(exit.Migration,
				"the applied migration %s cannot be verified: no project migrations directory is configured; pass {migrations_dir} or set ETL_CRAFT_MIGRATIONS_DIR",
				row.label())
		}
		if file == nil {
			return nil, exit.Errorf(exit.Migration,
				"the applied migration %s: '%s' is missing from %s; restore the file (applied migrations are never removed)",
				row.label(), row.Version, stream.Dir)
		}
		release, ok := file.recordedBy(row.Checksum)
		switch {
		case !ok && row.Source == Engine:
			return nil, exit.Errorf(exit.Migration,
				"the applied migration %s: SCHEMA_MIGRATIONS holds the checksum %s for '%s', which is neither this build's file nor one a released etl-craft build recorded; the Engine DB was migrated by a build this one does not know: upgrade it with that build's release or a newer one",
				row.label(), row.Checksum, row.Version)
		case !ok:
			return nil, exit.Errorf(exit.Migration,
				"the applied migration %s: '%s' has changed since it was applied; migration files are never edited: restore it and add a new migration instead",
				row.label(), row.Version)
		case release != "" && !seen[release]:
			seen[release] = true
			releases = append(releases, release)
		}
	}
	return releases, nil
}

// pending returns the files of the streams not in the ledger, in order.
func pending(ledger []ledgerRow, streams []Stream) []File {
	applied := map[string]bool{}
	for _, r := range ledger {
		applied[r.label()] = true
	}
	var out []File
	for _, s := range streams {
		for _, f := range s.Files {
			if !applied[f.Label()] {
				out = append(out, f)
			}
		}
	}
	return out
}
