package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sessiondb/sessiondb"

// TestImportRules keeps the command line's layout honest, file by file:
//   - a backend (sqlite/, postgres/) and the library's opener (open/) are
//     imported only by internal/store, the command line's one opener, so
//     every command holds interfaces;
//   - internal/sqlitedb only by internal/store and by bench, whose raw
//     phase times bare SQLite on purpose;
//   - a command group imports no other group (only internal/cli and
//     internal/store), and internal/cli imports no group; a group's tests
//     may run another group beside it.
func TestImportRules(t *testing.T) {
	backends := []string{module + "/sqlite", module + "/postgres", module + "/open"}
	internal := module + "/cmd/sessiondb/internal/"
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		dir := filepath.ToSlash(filepath.Dir(path))
		test := strings.HasSuffix(path, "_test.go")
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			for _, b := range backends {
				if (imp == b || strings.HasPrefix(imp, b+"/")) && dir != "internal/store" {
					t.Errorf("%s imports the backend %s: open stores through internal/store", path, imp)
				}
			}
			if imp == module+"/internal/sqlitedb" && dir != "internal/store" && dir != "internal/bench" {
				t.Errorf("%s imports internal/sqlitedb: only internal/store (and bench's raw phase) may", path)
			}
			group, ok := strings.CutPrefix(imp, internal)
			if !ok || !strings.HasPrefix(dir, "internal/") || test {
				continue
			}
			switch {
			case group == "cli" || group == "store":
			case strings.HasPrefix(dir, "internal/cli") || dir == "internal/store":
				t.Errorf("%s imports the command group %s: the shared packages serve groups, never the reverse", path, imp)
			default:
				t.Errorf("%s imports another command group, %s: share through internal/cli instead", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d files: is the test running in cmd/sessiondb?", checked)
	}
}
