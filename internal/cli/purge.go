package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/retention"
)

func (a *app) purgeCommand() *cobra.Command {
	var olderThan, archiveTo string
	var dryRun, vacuum bool
	var format *outputFormat
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Delete the Engine DB's history older than its retention",
		Long: "purge deletes what is older than the retention of its kind, set in the Retention section of\n" +
			"craft-connector.yml (runs, actions and metadata changes 400 days, attempt logs 90 days,\n" +
			"interventions forever by default; 0 keeps a kind forever), or older than --older-than (such\n" +
			"as 30d) for every kind not kept forever. It never deletes a run not ended, anything of a\n" +
			"pipeline's latest ended run, what kept rows rely on, nor the latest change of a CFG_ row.\n" +
			"It deletes in batches of about 10,000 rows, oldest first, one transaction each, and records\n" +
			"itself in AUD_ACTIONS with the rows it planned. --dry-run prints what would go and changes\n" +
			"nothing. --archive-to DIR (or Retention.Archive_to) first writes every row it will delete to\n" +
			"Parquet files named purge-<id>-<TABLE>.parquet and checks their row counts. --vacuum gives\n" +
			"the freed space back afterwards. It prints one tab-separated line per table.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := retention.Options{DryRun: dryRun, Vacuum: vacuum}
			var age time.Duration
			if cmd.Flags().Changed("older-than") {
				d, err := retention.ParseAge(olderThan)
				if err != nil {
					return usagef("--older-than: %v", err)
				}
				age = d
			}
			s, err := a.openSession(cmd)
			if err != nil {
				return err
			}
			defer s.db.Close()
			opts.Policy = retention.FromConfig(s.cfg.Retention)
			if age > 0 {
				opts.Policy = opts.Policy.OlderThan(age)
			}
			opts.ArchiveDir = s.cfg.Retention.ArchiveTo
			if cmd.Flags().Changed("archive-to") {
				opts.ArchiveDir = archiveTo
			}
			opts.LogDir, opts.Request, opts.Logger = s.cfg.Orchestration.LogDir, a.request(cmd, "", ""), a.logger()
			res, err := retention.Purge(s.ctx, s.db, opts)
			if err != nil {
				return err
			}
			if format.json() {
				return a.printJSON(res.Report())
			}
			t := newTable("TABLE", "ROWS", "ARCHIVE")
			for _, tb := range res.Tables {
				t.add(tb.Name, tb.Rows, tb.Archive)
			}
			a.printTable(t, "no tables")
			a.printf("%s\n", res.Summary())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&olderThan, "older-than", "", "delete what is older than this age (such as 30d, 12h), every kind not kept forever")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be deleted, per table, and change nothing")
	f.StringVar(&archiveTo, "archive-to", "", "first write every row to delete to Parquet files in this folder")
	f.BoolVar(&vacuum, "vacuum", false, "give the freed space back afterwards (SQLite rewrites the whole file)")
	format = addFormatFlag(cmd)
	return cmd
}
