package hostd

import "time"

// positiveOr is v, or def when v is zero or negative: the configs of this
// package read a setting that is not positive as "the default".
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
