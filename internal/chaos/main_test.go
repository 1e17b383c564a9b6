package chaos_test

import (
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// The tests run the binary e2e builds.
func TestMain(m *testing.M) { e2e.Main(m) }
