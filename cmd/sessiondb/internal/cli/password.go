package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sessiondb/sessiondb/internal/errtext"
)

// warnURLPasswords warns, once per run, when a database URL given on the
// command line (--db, --central, --from, ...: any flag) holds a password:
// every user of the machine can read a command line in the process list.
// The URL in $SESSIONDB_DATABASE_URL is not on the command line and is
// not warned about. libpq's ways (PGPASSWORD, PGPASSFILE, ~/.pgpass)
// keep the password out of the URL; the PostgreSQL driver reads them.
func (f *Factory) warnURLPasswords(c *cobra.Command) {
	var flags []string
	c.Flags().Visit(func(fl *pflag.Flag) {
		if errtext.HasPassword(fl.Value.String()) {
			flags = append(flags, "--"+fl.Name)
		}
	})
	if len(flags) == 0 {
		return
	}
	env := ""
	if slices.Contains(flags, "--db") {
		env = ", or give the whole URL in $SESSIONDB_DATABASE_URL"
	}
	fmt.Fprintf(f.Err, "sessiondb: warning: the URL given with %s holds a password, which any user of this machine can read in the process list (ps). Leave it out of the URL and put it in $PGPASSWORD or in a password file (~/.pgpass, or the file $PGPASSFILE names)%s.\n",
		strings.Join(flags, " and "), env)
}
