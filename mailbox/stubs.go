package mailbox

import (
	"github.com/sessiondb/sessiondb"
)

func notImplemented(what string) error {
	return sessiondb.Errorf(sessiondb.EINTERNAL, "mailbox: %s is not implemented yet", what)
}
