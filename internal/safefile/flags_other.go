//go:build !unix

package safefile

// Without these flags ReadFile relies on its checks before and after the
// open alone.
const (
	oNoFollow = 0
	oNonBlock = 0
)
