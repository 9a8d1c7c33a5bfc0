package sessiondb

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules keeps the layout's outer rules, file by file (the command
// line's own rules are cmd/sessiondb's TestImportRules): the root package,
// the domain, imports only the standard library, so every backend and face
// can depend on it and it on nothing; internal/testkit too, so the
// conformance suite, which may import only the root and testkit, links no
// backend's driver into another backend's tests.
func TestImportRules(t *testing.T) {
	const module = "github.com/sessiondb/sessiondb"
	rules := []struct {
		dir     string
		allowed []string // module packages the directory's non-test files may import
	}{
		{".", nil},
		{"internal/testkit", nil},
		{"storetest", []string{module, module + "/internal/testkit"}},
	}
	for _, r := range rules {
		files, err := filepath.Glob(filepath.Join(r.dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				first, _, _ := strings.Cut(imp, "/")
				if !strings.Contains(first, ".") || slices.Contains(r.allowed, imp) {
					continue // the standard library's paths have no dot in their first element
				}
				t.Errorf("%s imports %s: %s may import only the standard library%s", path, imp, r.dir, others(r.allowed))
			}
		}
		if checked == 0 {
			t.Errorf("%s: no Go files found: is the test running at the module root?", r.dir)
		}
	}
}

func others(allowed []string) string {
	if len(allowed) == 0 {
		return ""
	}
	return " and " + strings.Join(allowed, ", ")
}
