package testkit

import (
	"os"
	"strings"
	"testing"
)

// Inotify counts this process's inotify instances (its descriptors linked
// to anon_inode:inotify, which fs.inotify.max_user_instances limits per
// user) and the watches they hold (their fdinfo's "inotify wd:" lines).
func Inotify(t testing.TB) (instances, watches int) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err != nil || link != "anon_inode:inotify" {
			continue // closed since the listing, or not inotify
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		instances++
		for _, line := range strings.Split(string(info), "\n") {
			if strings.HasPrefix(line, "inotify wd:") {
				watches++
			}
		}
	}
	return instances, watches
}
