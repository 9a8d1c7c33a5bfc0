package main

import "github.com/spf13/cobra"

// benchCommands returns the `bench` command: the shared workload replay.
func benchCommands(a *app) []*cobra.Command {
	return nil
}
