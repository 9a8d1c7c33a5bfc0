package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/sqlite"
)

func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("sqlite.Open(%q): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestBadContent: bytes that are not clean text are either stored
// faithfully (and read back byte for byte) or refused as invalid; never
// mangled, never a panic, never a broken file.
func TestBadContent(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "state.db"))
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, content string }{
		{"invalid UTF-8", "abc \xff\xfe def"},
		{"truncated sequence", "caf\xc3"},
		{"UTF-16 surrogate bytes", "x \xed\xa0\x80 y"},
		{"NUL inside", "before\x00after"},
		{"leading NUL", "\x00lead"},
		{"only NUL", "\x00"},
		{"structured content of a newer Hermes", "\x00json:{\"type\":\"text\"}"},
		{"C0 controls", "bell\x07 tab\t esc\x1b"},
		{"SQL quotes", `it's "quoted"; DROP TABLE messages; --`},
	}
	stored := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.content
			id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: &c})
			if err != nil {
				if code := sessiondb.ErrorCode(err); code != sessiondb.EINVALID {
					t.Fatalf("refused with code %q (%v), want invalid", code, err)
				}
				t.Logf("refused: %v", err)
				return
			}
			stored++
			ms, err := s.GetMessages(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.ID == id {
					if m.Content == nil || *m.Content != tc.content {
						t.Errorf("content read back as %q, want %q", derefStr(m.Content), tc.content)
					}
					return
				}
			}
			t.Errorf("message %d not found", id)
		})
	}
	sess, err := s.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.MessageCount != int64(stored) {
		t.Errorf("message_count = %d, want %d stored", sess.MessageCount, stored)
	}
	for _, q := range []string{"\xff", "abc \xff", "\x00", "before\x00after", "caf\xc3"} {
		if _, err := s.SearchMessages(ctx, q, sessiondb.SearchFilter{}); err != nil && sessiondb.ErrorCode(err) != sessiondb.EINVALID {
			t.Errorf("SearchMessages(%q): %v (code %s), want results or invalid", q, err, sessiondb.ErrorCode(err))
		}
	}
	checkIntegrity(t, s)
}

func derefStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestLargeMessage: a 10 MB message round-trips and is searchable.
func TestLargeMessage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "state.db"))
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "big", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; b.Len() < 10<<20; i++ {
		fmt.Fprintf(&b, "line %d of a long tool output ü\n", i)
	}
	b.WriteString("zzyzxfinalword")
	content := b.String()
	id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "big", Role: "tool", Content: &content})
	if err != nil {
		t.Fatalf("append 10 MB: %v", err)
	}
	ms, err := s.GetMessages(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ID != id || ms[0].Content == nil || *ms[0].Content != content {
		t.Fatalf("10 MB message did not round-trip (got %d messages)", len(ms))
	}
	hits, err := s.SearchMessages(ctx, "zzyzxfinalword", sessiondb.SearchFilter{})
	if err != nil || len(hits) != 1 || hits[0].ID != id {
		t.Fatalf("search the end of a 10 MB message: %v, %v", hits, err)
	}
	if n := len([]rune(hits[0].Context[0].Content)); n != 200 {
		t.Errorf("context of a 10 MB message holds %d code points, want 200", n)
	}
}

// TestHostileIDs: ids are data, never SQL or patterns.
func TestHostileIDs(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "state.db"))
	cases := []string{
		`x'; DROP TABLE sessions; --`,
		`"double"`,
		`100%`,
		`a_b`,
		`back\slash`,
		`ünïcödé 会话`,
		strings.Repeat("L", sessiondb.MaxSessionIDBytes),
		"../../etc/passwd",
	}
	for _, id := range cases {
		name := id
		if len(name) > 20 {
			name = name[:20]
		}
		t.Run(name, func(t *testing.T) {
			if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
				if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
					t.Fatalf("CreateSession: %v, want success or invalid", err)
				}
				return
			}
			c := "hello " + id
			if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &c}); err != nil {
				t.Fatalf("AppendMessage: %v", err)
			}
			got, err := s.GetSession(ctx, id)
			if err != nil || got.ID != id || got.MessageCount != 1 {
				t.Fatalf("GetSession = %+v, %v", got, err)
			}
			if r, err := s.ResolveSessionID(ctx, id); err != nil || r != id {
				t.Errorf("ResolveSessionID = %q, %v", r, err)
			}
		})
	}
	if n, err := s.SessionCount(ctx, ""); err != nil || n != int64(len(cases)) {
		t.Errorf("SessionCount = %d, %v; want %d", n, err, len(cases))
	}
	_, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "no such session", Role: "user"})
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("append to an unknown session: %v, want invalid", err)
	}
	checkIntegrity(t, s)
}

// snapshot reads every file directly in dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = b
		}
	}
	return out
}

// makeVictim creates dir/victim.db holding one session "victim", closed.
func makeVictim(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "victim.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "victim", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHostilePaths: a path is a file name, nothing else. Empty, NUL,
// directory and URI-shaped paths fail clearly or name a literal file; the
// store beside them is never the one opened.
func TestHostilePaths(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		path func(dir string) string
		// mustFail: the path cannot be a literal file, so Open must fail
		// with code invalid. Otherwise failing or opening the literal file
		// are both fine.
		mustFail bool
	}{
		{name: "empty", path: func(string) string { return "" }, mustFail: true},
		{name: "NUL byte", path: func(dir string) string { return filepath.Join(dir, "state\x00.db") }, mustFail: true},
		{name: "directory", path: func(dir string) string { return dir }, mustFail: true},
		{name: "parent is a file", path: func(dir string) string { return filepath.Join(dir, "victim.db", "x.db") }},
		{name: "query mode=ro", path: func(dir string) string { return filepath.Join(dir, "victim.db?mode=ro") }},
		{name: "query mode=memory", path: func(dir string) string { return filepath.Join(dir, "victim.db?mode=memory&cache=shared") }},
		{name: "fragment", path: func(dir string) string { return filepath.Join(dir, "victim.db#frag") }},
		{name: "percent-encoded name", path: func(dir string) string { return filepath.Join(dir, "vic%74im.db") }},
		{name: "absolute file URI", path: func(dir string) string { return "file:" + filepath.Join(dir, "victim.db") }},
		{name: "absolute file URI with vfs", path: func(dir string) string { return "file://" + filepath.Join(dir, "victim.db") + "?vfs=unix-none" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			makeVictim(t, dir)
			before := snapshot(t, dir)
			path := tc.path(dir)
			s, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err == nil {
				if tc.mustFail {
					s.Close()
					t.Fatalf("Open(%q) succeeded, want invalid", path)
				}
				checkLiteral(t, s, path)
			} else {
				if tc.mustFail && sessiondb.ErrorCode(err) != sessiondb.EINVALID {
					t.Errorf("Open(%q): %v with code %q, want invalid", path, err, sessiondb.ErrorCode(err))
				}
				if err.Error() == "" {
					t.Errorf("Open(%q) failed without a message", path)
				}
				t.Logf("Open(%q): %v", path, err)
			}
			after := snapshot(t, dir)
			if !bytes.Equal(before["victim.db"], after["victim.db"]) {
				t.Errorf("victim.db changed")
			}
			checkVictim(t, dir)
		})
	}
}

// checkLiteral verifies an opened store lives at exactly path, not at a
// file path names by URI syntax, by writing a marker and finding the file.
func checkLiteral(t *testing.T, s *sqlite.Store, path string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.GetSession(ctx, "victim"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("Open(%q) reached victim.db (GetSession err %v)", path, err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "marker", Source: "cli"}); err != nil {
		t.Errorf("write to the literal file: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		t.Errorf("literal file %q missing after a successful open: %v", path, err)
	}
}

// checkVictim verifies victim.db still holds exactly its one session.
func checkVictim(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	v, err := sqlite.Open(ctx, filepath.Join(dir, "victim.db"), sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reopen victim: %v", err)
	}
	defer v.Close()
	got, err := v.SearchSessions(ctx, "", 10, 0)
	if err != nil || len(got) != 1 || got[0].ID != "victim" {
		t.Errorf("victim.db holds %+v, %v; want only session victim", got, err)
	}
}

// TestRelativeURIPaths opens URI-shaped relative paths in a child process
// whose working directory is a scratch folder, so a literal file lands there
// and nowhere else.
func TestRelativeURIPaths(t *testing.T) {
	for _, path := range []string{"file:victim.db", "file:victim.db?mode=rwc", ":memory:", "victim.db?mode=ro"} {
		t.Run(path, func(t *testing.T) {
			dir := t.TempDir()
			makeVictim(t, dir)
			before := snapshot(t, dir)
			cmd := helperCmd(t, "openpath", path)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Logf("child: %s", bytes.TrimSpace(out))
			after := snapshot(t, dir)
			if !bytes.Equal(before["victim.db"], after["victim.db"]) {
				t.Errorf("victim.db changed")
			}
			checkVictim(t, dir)
			if strings.HasPrefix(string(out), "OK") {
				if _, err := os.Stat(filepath.Join(dir, path)); err != nil {
					t.Errorf("open succeeded but the literal file is missing: %v", err)
				}
			} else if !strings.HasPrefix(string(out), "ERR") {
				t.Errorf("child said %q", out)
			}
		})
	}
}

// helperOpenPath: args path. Opens it relative to the working directory;
// prints "OK" after writing a marker session, or "ERR <code> <message>".
func helperOpenPath(args []string) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, args[0], sqlite.Options{})
	if err != nil {
		fmt.Printf("ERR %s %v\n", sessiondb.ErrorCode(err), err)
		return nil
	}
	if _, err := s.GetSession(ctx, "victim"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		return fmt.Errorf("%q reached victim.db (GetSession err %v)", args[0], err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "marker", Source: "cli"}); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	fmt.Println("OK")
	return nil
}

// TestCorruptFile: a file that is not a sound database fails to open with a
// clear error and is left byte for byte as it was.
func TestCorruptFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	cases := []struct {
		name     string
		content  []byte
		readOnly bool
	}{
		{"random bytes", garbage, false},
		{"random bytes read-only", garbage, true},
		{"text file", []byte("these are my notes, not a database\n"), false},
		{"SQLite header then garbage", append([]byte("SQLite format 3\x00"), garbage[:8192]...), false},
		{"SQLite header then garbage read-only", append([]byte("SQLite format 3\x00"), garbage[:8192]...), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: tc.readOnly})
			if err == nil {
				s.Close()
				t.Fatal("Open of a corrupt file succeeded")
			}
			t.Logf("Open: %v (code %s)", err, sessiondb.ErrorCode(err))
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			got, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(got, tc.content) {
				t.Errorf("corrupt file was modified (%d bytes now, %d before; %v)", len(got), len(tc.content), rerr)
			}
		})
	}
}

// TestFileModes: a new store is 0600 in a 0700 folder; an existing store
// that others can read is tightened to 0600; nothing is loosened.
func TestFileModes(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		root := t.TempDir()
		path := filepath.Join(root, "a", "b", "state.db")
		s := openStore(t, path)
		ctx := context.Background()
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		c := "hi"
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: &c}); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
			if m := mode(t, d); m != 0o700 {
				t.Errorf("%s mode %v, want 0700", d, m)
			}
		}
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			m, err := os.Stat(f)
			if errors.Is(err, fs.ErrNotExist) && f != path {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", f, m.Mode().Perm())
			}
		}
	})
	cases := []struct {
		name     string
		mode     fs.FileMode
		want     fs.FileMode
		readOnly bool
	}{
		{"world-readable", 0o644, 0o600, false},
		{"group-readable", 0o640, 0o600, false},
		{"world-writable", 0o666, 0o600, false},
		{"executable", 0o700, 0o600, false},
		{"private stays", 0o600, 0o600, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			s := openStore(t, path)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			s, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: tc.readOnly})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer s.Close()
			if m := mode(t, path); m != tc.want {
				t.Errorf("mode after open %v, want %v", m, tc.want)
			}
		})
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestLongSessionIDFromHermes: a session whose id is longer than
// sessiondb.MaxSessionIDBytes, as Hermes (which has no limit) may have
// written it, still reads, ends, exports and deletes; only new writes
// naming it (an append, an import of its export) are refused, as invalid
// naming the limit.
func TestLongSessionIDFromHermes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openStore(t, path)
	long := "20260315_092437_" + strings.Repeat("c", 8000)
	sqlitetest.ExecFile(t, path, "INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', 1773566677)", long)
	sqlitetest.ExecFile(t, path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'kept whole', 1773566678)", long)

	if got, err := sessiondb.FindSession(ctx, s, long[:24], false); err != nil || got != long {
		t.Fatalf("FindSession by a prefix = %.40q, %v; want the long id", got, err)
	}
	if ms, err := s.GetMessages(ctx, long); err != nil || len(ms) != 1 || derefStr(ms[0].Content) != "kept whole" {
		t.Fatalf("GetMessages = %v, %v; want the one message", ms, err)
	}
	if err := s.EndSession(ctx, long, "cli_close"); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	rec, err := s.ExportSession(ctx, long)
	if err != nil || rec["id"] != long || rec["end_reason"] != "cli_close" {
		t.Fatalf("ExportSession = id %.40v, end_reason %v, %v", rec["id"], rec["end_reason"], err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "bytes, the limit is 255") {
			t.Errorf("%s: %v, want invalid naming the limit", what, err)
		}
	}
	more := "more"
	_, err = s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: long, Role: "user", Content: &more})
	refused("AppendMessage", err)
	other := openStore(t, filepath.Join(t.TempDir(), "other.db"))
	_, err = other.ImportSession(ctx, rec, sessiondb.ImportOptions{})
	refused("ImportSession of its export", err)
	if ids, err := s.DeleteSession(ctx, long); err != nil || len(ids) != 1 {
		t.Fatalf("DeleteSession = %v, %v; want it deleted", ids, err)
	}
	if n := sqlitetest.QueryValue(t, path, "SELECT count(*) FROM messages"); n != int64(0) {
		t.Errorf("%v messages left after the delete, want 0", n)
	}
}

// TestImportedMessageIDsInRange: an imported message id must be from 1 to
// 2^53. Export pages through a session's messages from id 0 up, so a
// message stored with id 0 or below was never exported again (the session
// counted two messages and exported none); an id of the id type's maximum
// leaves the next append no id to take. Each is refused naming the field,
// and nothing of its session is stored; 1 and 2^53 are kept.
func TestImportedMessageIDsInRange(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "state.db"))
	ctx := context.Background()
	rec := func(id string, msgID any) map[string]any {
		return map[string]any{"id": id, "source": "cli", "started_at": 1.0, "messages": []any{
			map[string]any{"id": 5.0, "role": "user", "content": "kept", "timestamp": 1.0},
			map[string]any{"id": msgID, "role": "user", "content": "edge", "timestamp": 2.0},
		}}
	}
	for i, bad := range []any{0.0, -3.0, json.Number("-9223372036854775808"), json.Number("9223372036854775807"), json.Number("9007199254740993")} {
		id := fmt.Sprintf("bad%d", i)
		_, err := s.ImportSession(ctx, rec(id, bad), sessiondb.ImportOptions{})
		if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(fmt.Sprint(err), "messages[1].id") {
			t.Errorf("message id %v: error %v, want invalid naming messages[1].id", bad, err)
		}
		if _, err := s.GetSession(ctx, id); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("message id %v: the session is stored (%v)", bad, err)
		}
	}
	for i, good := range []any{1.0, json.Number("9007199254740992")} {
		id := fmt.Sprintf("good%d", i)
		if _, err := s.ImportSession(ctx, rec(id, good), sessiondb.ImportOptions{}); err != nil {
			t.Fatalf("message id %v: %v", good, err)
		}
		out, err := s.ExportSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if msgs, _ := out["messages"].([]map[string]any); len(msgs) != 2 {
			t.Errorf("message id %v: %d messages exported, want 2", good, len(msgs))
		}
	}
}

// A session row whose column holds what the schema does not (text in
// message_count, written by another program) fails a listing with an
// error naming that session, so it can be found and mended; the other
// sessions still read one by one.
func TestMalformedSessionRowIsNamed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openStore(t, path)
	for _, id := range []string{"fine", "odd one"} {
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	sqlitetest.ExecFile(t, path, "UPDATE sessions SET message_count = 'x' WHERE id = 'odd one'")
	_, err := s.ListSessions(ctx, sessiondb.SessionQuery{})
	if err == nil || !strings.Contains(err.Error(), `session "odd one"`) || !strings.Contains(err.Error(), "message_count") {
		t.Fatalf("listing over a malformed row: %v; want an error naming the session and the column", err)
	}
	if got, err := s.GetSession(ctx, "fine"); err != nil || got.ID != "fine" {
		t.Fatalf("the other session: %v, %v", got, err)
	}
}
