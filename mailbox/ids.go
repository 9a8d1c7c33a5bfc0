package mailbox

import (
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb"
)

// NewID returns <prefix>-<unix ms>-<6 base-36 characters>, NanoClaw's id
// form for generated rows (prefix "msg", "task", "sess", ...); it is
// sessiondb.NewID.
func NewID(prefix string, now time.Time) string { return sessiondb.NewID(prefix, now) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
