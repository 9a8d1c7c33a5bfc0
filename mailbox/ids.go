package mailbox

import (
	"math/rand/v2"
	"strconv"
	"time"
)

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// NewID returns <prefix>-<unix ms>-<6 base-36 characters>, NanoClaw's id
// form for generated rows (prefix "msg", "task", "sess", ...).
func NewID(prefix string, now time.Time) string {
	var r [6]byte
	for i := range r {
		r[i] = base36[rand.IntN(len(base36))]
	}
	return prefix + "-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + string(r[:])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
