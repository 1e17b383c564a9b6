package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/doctor"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/report"
)

func (a *app) doctorCommand() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, secrets, Engine DB, warehouse, email and cloning",
		Long: "doctor runs every check of the deployment and reports all of them, one line each,\n" +
			"then a summary. It exits 1 when any check failed. It changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return usagef("--format %q: use text or json", format)
			}
			cfg, err := a.loadConfigForChecks()
			if err != nil {
				return err
			}
			dir, _ := cfg.MigrationsDir("")
			checks := doctor.Run(cmd.Context(), doctor.Options{
				Config: cfg, MigrationsDir: dir, Engine: project.EngineOptions(cfg), Warehouse: project.WarehouseOptions(cfg),
			})
			if format == "json" {
				ok, w, f := checks.Counts()
				doc := report.Doctor{Schema: report.SchemaDoctor, Checks: make([]report.DoctorCheck, len(checks.Checks)), OK: ok, Warnings: w, Failed: f}
				for i, c := range checks.Checks {
					doc.Checks[i] = report.DoctorCheck{Status: string(c.Status), Name: c.Name, Detail: c.Detail}
				}
				b, _ := json.MarshalIndent(doc, "", "  ")
				a.printf("%s\n", b)
			} else {
				a.printReport(checks)
			}
			if checks.Failed() {
				a.status = exit.Failure
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	return cmd
}

// printReport prints the checks one a line, then the summary.
func (a *app) printReport(r doctor.Report) {
	for _, c := range r.Checks {
		fmt.Fprintln(a.stdout, c.String())
	}
	fmt.Fprintln(a.stdout, r.Summary())
}
