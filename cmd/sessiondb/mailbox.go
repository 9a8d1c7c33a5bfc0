package main

import "github.com/spf13/cobra"

// mailboxCommands returns `mailbox ...` and `host`: session mailbox
// inspection, the agent side from a shell, and the host daemon.
func mailboxCommands(a *app) []*cobra.Command {
	return nil
}
