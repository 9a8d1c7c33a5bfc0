//go:build !unix

package sqlitedb

import "io/fs"

// mayCreateBeside: without Unix owners and access(2), SQLite's own rules
// apply.
func mayCreateBeside(path string, fi fs.FileInfo) bool { return true }

// DescribeAccess: without access(2), nothing to add to SQLite's error.
func DescribeAccess(path string, write bool) string { return "" }
