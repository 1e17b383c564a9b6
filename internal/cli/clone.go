package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/report"
)

func (a *app) cloneCommand() *cobra.Command {
	var full bool
	var format *outputFormat
	cmd := &cobra.Command{
		Use:   "clone",
		Short: "Copy the Engine DB's tables into the warehouse now",
		Long: "clone mirrors the Engine DB tables of Cloning.Scope (cfg: the CFG_ tables, aud: the AUD_\n" +
			"tables, all: both) into the Warehouse profile's schema, as every run does when cloning is\n" +
			"on. It prints one tab-separated line per table: the Engine DB table, its mirror, the rows\n" +
			"the mirror holds, and created or added with the columns added. A mirror proven to be\n" +
			"what the last clone left gets only the rows changed since; --full replaces every\n" +
			"mirror's rows. A failure exits 17, naming the table and the database's message.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openProject(cmd)
			if err != nil {
				return err
			}
			defer s.p.Close()
			opts, err := s.p.CloneOptions()
			if err != nil {
				return err
			}
			opts.Full = full
			if err := a.record(s.ctx, s.db, cmd, "", ""); err != nil {
				return err
			}

			display := newProgressDisplay(a.terminal)
			if display != nil {
				opts.Progress = display.show
			}
			tables, err := clone.Run(s.ctx, s.db, s.p.Warehouse, opts)
			if display != nil {
				display.clear()
			}
			if format.json() {
				if perr := a.printJSON(cloneReport(tables)); perr != nil && err == nil {
					err = perr
				}
				return err
			}
			for _, t := range tables {
				a.printf("%s\n", t.Line())
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "replace every mirror's rows, even one that could be caught up incrementally")
	format = addFormatFlag(cmd)
	return cmd
}

// cloneReport is the clone/1 document of the tables a clone wrote.
func cloneReport(tables []clone.Table) report.Clone {
	doc := report.Clone{Schema: report.SchemaClone, Tables: []report.ClonedTable{}}
	for _, t := range tables {
		added := t.Added
		if added == nil {
			added = []string{}
		}
		doc.Tables = append(doc.Tables, report.ClonedTable{Table: t.Engine, Mirror: t.Mirror.Full(), Rows: t.Rows,
			Copied: t.Copied, Copy: t.Copy(), Why: exit.Flags(t.Why), Created: t.Created, Added: added})
	}
	return doc
}

// progressRows is the size from which a table's copy shows its progress.
const progressRows = 10_000

// progressEvery is how often the progress line is rewritten at most.
const progressEvery = 200 * time.Millisecond

// progressDisplay is the one line on a terminal's stderr that shows the
// table being copied and its rows so far, rewritten in place.
type progressDisplay struct {
	out   io.Writer
	shown bool
	last  time.Time
}

// newProgressDisplay returns the display, or nil when stderr is not a
// terminal: output to a file or a pipe gets nothing extra.
func newProgressDisplay(stderr io.Writer) *progressDisplay {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progressDisplay{out: f}
}

func (d *progressDisplay) show(p clone.Progress) {
	switch {
	case p.Done:
		d.clear()
	case p.Rows >= progressRows && time.Since(d.last) >= progressEvery:
		fmt.Fprintf(d.out, "\r\033[K%s: %d rows copied into %s", p.Table, p.Rows, p.Mirror)
		d.shown, d.last = true, time.Now()
	}
}

// clear erases the progress line, if one is shown.
func (d *progressDisplay) clear() {
	if d.shown {
		fmt.Fprint(d.out, "\r\033[K")
		d.shown = false
	}
}
