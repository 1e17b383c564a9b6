package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/configfiles"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/report"
)

func (a *app) configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Keep the pipeline metadata as CSV files: export, plan and apply them",
		Long: "config keeps the CFG_ metadata as six CSV files in <project>/config/ (or --config-dir):\n" +
			strings.Join(configfiles.Files(), ", ") + ".\n" +
			"export writes the Engine DB's rows as the files; plan shows what applying them would change,\n" +
			"runs validate on the result and rolls back; apply makes the changes in one transaction and\n" +
			"commits only when validate passes. The files hold the whole configuration: an active row no\n" +
			"file holds is retired. Exits 25 for an unreadable file or a bad row (file:line:column), 1\n" +
			"when validate fails, 12 when the Engine DB has no CFG_ tables.",
		Args: unknownCommand,
		RunE: func(*cobra.Command, []string) error {
			return usagef("no config command given: use export, plan or apply")
		},
	}
	cmd.AddCommand(a.configExportCommand(), a.configSyncCommand(false), a.configSyncCommand(true))
	return cmd
}

// configDirFlag is the --config-dir flag of every config command.
type configDirFlag struct{ dir string }

func addConfigDirFlag(cmd *cobra.Command) *configDirFlag {
	f := &configDirFlag{}
	cmd.Flags().StringVar(&f.dir, "config-dir", "", "the folder of the CSV files (default: config/ of the project)")
	return f
}

// path returns the folder: the flag's, or config/ of the project folder.
func (f *configDirFlag) path(projectDir string) string {
	if f.dir == "" {
		return filepath.Join(projectDir, "config")
	}
	if abs, err := filepath.Abs(f.dir); err == nil {
		return abs
	}
	return f.dir
}

// openConfig opens the Engine DB of a config command, checks that it holds
// the CFG_ tables, and returns the files' folder. The caller closes s.p.
func (a *app) openConfig(cmd *cobra.Command, dir *configDirFlag) (*session, string, error) {
	s, err := a.openSession(cmd)
	if err != nil {
		return nil, "", err
	}
	if err := configfiles.Ready(s.ctx, s.db); err != nil {
		s.p.Close()
		return nil, "", err
	}
	return s, dir.path(s.cfg.ProjectDir), nil
}

func (a *app) configExportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the Engine DB's metadata as the six CSV files",
		Long: "export writes one row per key of each CFG_ table (the active row, else the newest retired\n" +
			"one) into the six files, and prints the files' revision. It refuses to overwrite existing\n" +
			"files without --force.",
		Args: cobra.NoArgs,
	}
	dir := addConfigDirFlag(cmd)
	force := cmd.Flags().Bool("force", false, "overwrite existing files")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, path, err := a.openConfig(cmd, dir)
		if err != nil {
			return err
		}
		defer s.p.Close()
		out, err := configfiles.Export(s.ctx, s.db, path, *force)
		if err != nil {
			return err
		}
		doc := report.ConfigExport{Schema: report.SchemaConfigExport, Revision: out.Set.Revision, Dir: path}
		total := 0
		for _, name := range configfiles.Files() {
			doc.Files = append(doc.Files, report.ConfigFile{File: name, Rows: out.Rows[name]})
			total += out.Rows[name]
		}
		if format.json() {
			return a.printJSON(doc)
		}
		a.printf("config %s exported to %s: %d row(s) in %d file(s)\n", out.Set.Short(), path, total, len(doc.Files))
		for _, f := range doc.Files {
			a.printf("  %s\t%d\n", f.File, f.Rows)
		}
		return nil
	}
	return cmd
}

// configSyncCommand is config apply (apply set) or config plan.
func (a *app) configSyncCommand(apply bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what applying the CSV files would change, validate the result, and roll back",
		Long: "plan merges the six files into the Engine DB by key in a transaction, as apply does, runs\n" +
			"validate on the result, prints every change and finding, and rolls back. It exits 1 when\n" +
			"validate fails.",
		Args: cobra.NoArgs,
	}
	if apply {
		cmd.Use = "apply"
		cmd.Short = "Merge the CSV files into the Engine DB in one transaction"
		cmd.Long = "apply merges the six files into the Engine DB by key in one transaction: it inserts new\n" +
			"rows, updates changed ones in place, reactivates and retires rows, and retires every active\n" +
			"row no file holds. It runs validate on the result and commits only when nothing failed\n" +
			"(exit 1 otherwise). AUD_METADATA_CHANGES records each change with config@<revision>."
	}
	dir := addConfigDirFlag(cmd)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, path, err := a.openConfig(cmd, dir)
		if err != nil {
			return err
		}
		defer s.p.Close()
		if apply {
			if err := a.record(s.ctx, s.db, cmd, "", ""); err != nil {
				return err
			}
		}
		set, err := configfiles.Read(path)
		if err != nil {
			return err
		}
		res, err := configfiles.Sync(s.ctx, s.db, set, configfiles.SyncRequest{Apply: apply,
			Validate: inspect.ValidateRequest{Handlers: s.p.Handlers, CheckPipeline: s.p.CheckPipeline, ProjectDir: s.cfg.ProjectDir}})
		if err != nil {
			return err
		}
		if res.Validation.Failed > 0 {
			a.status = exit.Failure
		}
		doc := report.ConfigSync{Schema: report.SchemaConfigSync, Command: cmd.Name(), Revision: set.Revision,
			Dir: path, Applied: res.Applied, Changes: []report.ConfigChange{}, Validation: res.Validation}
		for _, c := range res.Changes {
			doc.Changes = append(doc.Changes, report.ConfigChange{Op: c.Op, File: c.File, Row: c.Row, Details: c.Details})
		}
		if format.json() {
			return a.printJSON(doc)
		}
		a.printf("config %s from %s: %d change(s)\n", set.Short(), path, len(res.Changes))
		for _, c := range res.Changes {
			line := "  " + c.Op + " " + c.File + " " + c.Row
			if len(c.Details) > 0 {
				line += "  (" + strings.Join(c.Details, "; ") + ")"
			}
			a.printf("%s\n", line)
		}
		a.printFindings(res.Validation)
		a.printf("%s\n", closingLine(apply, res))
		return nil
	}
	return cmd
}

// closingLine is the last line of config plan and config apply.
func closingLine(apply bool, res configfiles.Result) string {
	switch {
	case res.Validation.Failed > 0 && apply:
		return "validation failed: nothing applied"
	case res.Validation.Failed > 0:
		return "validation failed: apply would refuse these files"
	case apply:
		return fmt.Sprintf("applied %d change(s)", len(res.Changes))
	}
	return "plan only: nothing changed"
}
