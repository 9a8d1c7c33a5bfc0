package main

import "github.com/spf13/cobra"

// historyCommands returns the history store commands (sessions, show,
// search, title, lineage, stats, export, import, fork, end, reopen, clear,
// delete, prune, doctor).
func historyCommands(a *app) []*cobra.Command {
	return nil
}

// isUsageError reports errors cobra returns for a malformed command line.
func isUsageError(err error) bool { return false }
