// Package schema holds the packaged Engine DB schema and ENGINE migrations of
// each dialect, embedded in the binary, with the checksums released builds
// recorded for those migrations (released-checksums.toml of each dialect),
// and migration-markers.toml, which adds markers to released migration files
// without changing their bytes.
package schema

import (
	"embed"
	"io/fs"
)

//go:embed sqlite postgres migration-markers.toml
var files embed.FS

// Schema returns the dialect's full current schema (schema.sql), which
// init-db applies to an empty database. dialect is "sqlite" or "postgres".
func Schema(dialect string) ([]byte, error) {
	return files.ReadFile(dialect + "/schema.sql")
}

// Migrations returns the folder of the dialect's ENGINE migrations.
func Migrations(dialect string) (fs.FS, error) {
	return fs.Sub(files, dialect+"/migrations")
}

// ReleasedChecksums returns the dialect's released-checksums.toml: for each
// released build, the checksum it recorded for each ENGINE migration whose
// bytes differ from this build's.
func ReleasedChecksums(dialect string) ([]byte, error) {
	return files.ReadFile(dialect + "/released-checksums.toml")
}

// Markers returns the packaged migration-markers.toml.
func Markers() ([]byte, error) {
	return files.ReadFile("migration-markers.toml")
}
