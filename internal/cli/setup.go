package cli

import "github.com/spf13/cobra"

func (a *app) setupCommand() *cobra.Command { return &cobra.Command{Use: "setup", Hidden: true} }

func (a *app) quickstartCommand() *cobra.Command {
	return &cobra.Command{Use: "quickstart", Hidden: true}
}
