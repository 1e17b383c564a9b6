package cli

import (
	"context"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lineage"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

func (a *app) generateDocsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate-docs",
		Short: "Write the catalog: a static, searchable site of the project's pipelines, tasks, tables and runs",
		Long: "generate-docs writes the catalog site: pipelines with their task graph, tasks with their SQL and\n" +
			"parameters, tables with their lineage graph, business rules, scripts, runs with their history,\n" +
			"interventions and consumption, and paused pipelines. It works opened from the folder (file://)\n" +
			"as from any web server, with nothing fetched from the internet. The folder is --output, else\n" +
			"Docs_site.Output, else catalog/ in the project; it is written only when it is new, empty, or a\n" +
			"catalog generate-docs wrote (it holds .etl-craft-catalog), and replaced whole. Each task whose\n" +
			"lineage cannot be traced is named; with --strict nothing is written then, and it exits 1.",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	output := addCatalogFlag(cmd)
	withWarehouse := fl.Bool("with-warehouse", false, "also read each table's columns from the warehouse")
	strict := fl.Bool("strict", false, "write nothing, and exit 1, when a task's lineage cannot be traced")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		open := a.openSession
		if *withWarehouse {
			open = a.openProject
		}
		s, err := open(cmd)
		if err != nil {
			return err
		}
		defer s.p.Close()
		if err := a.record(s.ctx, s.db, cmd, "", ""); err != nil {
			return err
		}
		folder, err := catalogFolder(s.cfg, *output)
		if err != nil {
			return err
		}
		if err := docsite.CheckFolder(folder); err != nil {
			return err
		}
		var w warehouse.Warehouse
		if *withWarehouse {
			if s.p.Warehouse == nil {
				return exit.Errorf(exit.Configuration, "generate-docs --with-warehouse needs the warehouse: add a Warehouse section to %s", config.FileName)
			}
			acquired, release, err := s.p.Warehouse.Acquire(s.ctx)
			if err != nil {
				return err
			}
			defer release()
			w = acquired
		}
		cat, err := docsite.Load(s.ctx, s.db, s.cfg.ProjectDir, time.Now())
		if err != nil {
			return err
		}
		site := &docsite.Site{Catalog: cat, Version: Version}
		if w != nil {
			site.DefaultDatabase = w.Catalog()
		}
		if site.Lineage, err = siteLineage(s.ctx, s, cat, w, site.DefaultDatabase); err != nil {
			return err
		}
		untraced := site.Lineage.Untraced()
		for _, u := range untraced {
			a.printf("column lineage unavailable: %s: %s\n", u.Task, u.Reason)
		}
		if *strict && len(untraced) > 0 {
			a.printf("generate-docs: nothing written; %d task(s) not traced\n", len(untraced))
			a.status = exit.Failure
			return nil
		}
		if w != nil {
			if site.Columns, err = docsite.WarehouseColumns(s.ctx, w, site.Lineage); err != nil {
				return err
			}
		}
		pages, err := docsite.Write(folder, site)
		if err != nil {
			return err
		}
		a.printf("generate-docs: wrote %d page(s) to %s\n", pages, folder)
		return nil
	}
	return cmd
}

// siteLineage is the lineage the catalog shows: column lineage from the
// warehouse's own parser when the project has a Warehouse section (SELECT *
// is expanded when w, the open warehouse, is given), else docsite's
// table-level lineage from the Engine DB alone.
func siteLineage(ctx context.Context, s *session, cat *docsite.Catalog, w warehouse.Warehouse, defaultDatabase string) (*docsite.Lineage, error) {
	wopts := project.WarehouseOptions(s.cfg)
	if wopts == nil {
		return docsite.TableLevel(cat, defaultDatabase), nil
	}
	g, err := lineage.Build(ctx, s.db, w, lineage.Options{Kind: wopts.Kind, Catalog: wopts.Catalog, ProjectDir: s.cfg.ProjectDir})
	if err != nil {
		return nil, err
	}
	l := &docsite.Lineage{Level: docsite.LevelColumn}
	for _, t := range g.Tasks {
		if t.Handler != pipeline.HandlerSQL && t.Handler != pipeline.HandlerPython {
			continue
		}
		l.Tasks = append(l.Tasks, docsite.TaskTrace{Task: t.Task, Target: t.Target, Sources: t.Reads, Traced: t.Error == "", Reason: t.Error})
	}
	for _, e := range g.TableEdges {
		l.Edges = append(l.Edges, docsite.Edge{Task: e.Task, Target: docsite.ColumnRef{Table: e.To}, Source: docsite.ColumnRef{Table: e.From}, Kind: docsite.KindTable})
	}
	for _, e := range g.ColumnEdges {
		edge := docsite.Edge{Task: e.Task, Target: docsite.ColumnRef{Table: e.TargetTable, Column: e.TargetColumn},
			Source: docsite.ColumnRef{Table: e.SourceTable, Column: e.SourceColumn}, Kind: docsite.KindCopy}
		if e.Transformation != lineage.Copy {
			edge.Kind, edge.Expression = docsite.KindExpression, e.Transformation
		}
		l.Edges = append(l.Edges, edge)
	}
	return l, nil
}

// addCatalogFlag adds --output, the catalog's folder, to cmd.
func addCatalogFlag(cmd *cobra.Command) *string {
	return cmd.Flags().String("output", "", "the catalog's folder (default: Docs_site.Output, else catalog/ in the project)")
}

// catalogFolder is the catalog's folder: the flag's (from the working
// directory), else Docs_site.Output, else catalog/ in the project.
func catalogFolder(cfg *config.Config, flag string) (string, error) {
	if flag == "" {
		return cfg.CatalogDir(), nil
	}
	abs, err := filepath.Abs(flag)
	if err != nil {
		return "", exit.Wrap(exit.Configuration, err, "cannot resolve the folder %s", flag)
	}
	return abs, nil
}
