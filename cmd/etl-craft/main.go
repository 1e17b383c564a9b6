// Command etl-craft runs SQL pipelines defined as metadata in the Engine DB
// against a warehouse, and records every run, attempt and change.
//
// Start with `etl-craft quickstart`, or see the README and docs/.
package main

import (
	"os"

	"github.com/etl-craft/etl-craft/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
