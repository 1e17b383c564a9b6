package metrics_test

import (
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// The black-box tests of the metrics and traces run the binary e2e builds.
func TestMain(m *testing.M) { e2e.Main(m) }
