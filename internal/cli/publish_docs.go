package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/exit"
)

func (a *app) publishDocsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish-docs",
		Short: "Serve the catalog site on this machine until stopped",
		Long: "publish-docs serves the site generate-docs wrote (--output, else Docs_site.Output, else catalog/\n" +
			"in the project) with --local-only on --host and --port (0 picks a free port), to the addresses of\n" +
			"Docs_site.Allowed_ips when set, until Ctrl-C. Its URL is recorded in AUD_DOCS_PUBLICATION; a URL\n" +
			"other than the one recorded last is refused, since links already shared would break, unless\n" +
			"--accept-new-url. Publishing through an ngrok tunnel is not available in this build: serve the\n" +
			"folder behind a web server of your own to publish it beyond this machine.",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	output := addCatalogFlag(cmd)
	localOnly := fl.Bool("local-only", false, "serve on this machine only, at --host and --port")
	host := fl.String("host", "127.0.0.1", "the address to serve on, with --local-only")
	port := fl.Int("port", 0, "the port to serve on; 0 picks a free one")
	acceptNew := fl.Bool("accept-new-url", false, "record a URL other than the last one recorded, and use it from now on")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *port < 0 || *port > 65535 {
			return usagef("--port %d: use 0 (any free port) to 65535", *port)
		}
		s, err := a.openSession(cmd)
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
		if !*localOnly {
			return exit.Errorf(exit.Configuration,
				"publish-docs opens an ngrok tunnel, which this build cannot do: serve the catalog on this machine "+
					"with --local-only (--host, --port), or publish %s behind a web server of your own "+
					"(nginx, Caddy, Apache httpd) that serves the folder as static files, as it works from any folder",
				folder)
		}
		var allowed []string
		if s.cfg.DocsSite != nil {
			allowed = s.cfg.DocsSite.AllowedIPs
		}
		srv, err := docsite.Listen(folder, *host, *port, allowed)
		if err != nil {
			return err
		}
		if err := docsite.RecordPublication(s.ctx, s.db, srv.URL, *acceptNew, time.Now()); err != nil {
			srv.Close()
			return err
		}
		a.printf("publish-docs: serving %s at %s (Ctrl-C to stop)\n", folder, srv.URL)
		if err := srv.Serve(s.ctx); err != nil {
			return exit.Wrap(exit.Configuration, err, "the catalog's web server at %s stopped", srv.URL)
		}
		a.printf("publish-docs: stopped\n")
		return nil
	}
	return cmd
}
