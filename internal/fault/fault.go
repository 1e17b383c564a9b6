// Package fault implements named fault points for crash and failure tests.
//
// ETL_CRAFT_FAULT=<point> makes Point(<point>) return an injected fault (exit
// 19); ETL_CRAFT_FAULT=<point>:kill ends the process at once with status 137,
// running no deferred cleanup, as a crash would. Any other value does nothing.
package fault

import (
	"os"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Variable is the environment variable that selects a fault point.
const Variable = "ETL_CRAFT_FAULT"

// KilledStatus is the exit status of a process ended by a ":kill" fault.
const KilledStatus = 137

// Point returns an injected fault when ETL_CRAFT_FAULT names this point, and
// ends the process when it names the point with ":kill".
func Point(name string) error {
	v := os.Getenv(Variable)
	if v == "" {
		return nil
	}
	point, mode, hasMode := strings.Cut(v, ":")
	if point != name {
		return nil
	}
	switch {
	case !hasMode:
		return exit.Errorf(exit.InjectedFault, "injected fault at %s", name)
	case mode == "kill":
		os.Exit(KilledStatus)
	}
	return nil
}
