package cli

import (
	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/version"
)

// versionReport is what `sessiondb version` prints: the build's version
// (internal/version, the same string --version, doctor, the server's
// /healthz and MCP report) and the SQLite library linked in.
type versionReport struct {
	version.Info
	Driver        string `json:"driver"`
	SQLiteVersion string `json:"sqlite_version"`
}

func (f *Factory) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print sessiondb's version, the Go that built it and the SQLite linked in",
		Long: `Print the version of this binary: a release's version, else the module
version Go stamped into the build, else the git revision it was built from
(with -modified when the tree had changes), else devel.

` + "`go run`" + ` and test binaries stamp nothing and say devel; ` + "`go build`" + ` in a
clone stamps the commit as a pseudo-version (v0.0.0-<time>-<commit>, with
+dirty when the tree had changes). A release build sets the version with
-ldflags "-X github.com/sessiondb/sessiondb/internal/version.release=v1.2.0".

--version prints the first line; doctor, the server's /healthz and MCP's
serverInfo report the same version.`,
		Example: `  sessiondb version
  sessiondb --version
  sessiondb version --json`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			r := versionReport{Info: version.Get(), Driver: store.Driver, SQLiteVersion: store.SQLiteVersion(c.Context())}
			if f.JSON {
				return f.PrintJSON(r)
			}
			f.Printf("sessiondb %s\n", r.Version)
			if r.Revision != "" {
				mod := ""
				if r.Modified {
					mod = " (modified)"
				}
				f.Printf("revision  %s%s\n", r.Revision, mod)
			}
			f.Printf("go        %s\n", r.GoVersion)
			f.Printf("sqlite    %s (driver %s)\n", OrDash(r.SQLiteVersion), r.Driver)
			return nil
		},
	}
}
