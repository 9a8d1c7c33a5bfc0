//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package bench

// flushFileSystems is a no-op where the standard library offers no sync(2).
func flushFileSystems() {}
