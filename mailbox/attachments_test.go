package mailbox

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func TestInboundAttachments(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("bytes"))
	cases := []struct {
		name     string
		att      string
		wantName string
	}{
		{"explicit name", `{"type":"document","name":"report.pdf","data":"` + b64 + `"}`, "report.pdf"},
		{"jpeg mime", `{"type":"image","mimeType":"image/JPEG; q=1","data":"` + b64 + `"}`, "attachment-1772366400000.jpg"},
		{"audio/mp4", `{"mimeType":"audio/mp4","data":"` + b64 + `"}`, "attachment-1772366400000.m4a"},
		{"text/plain", `{"mimeType":"text/plain","data":"` + b64 + `"}`, "attachment-1772366400000.txt"},
		{"coarse voice", `{"type":"voice","data":"` + b64 + `"}`, "attachment-1772366400000.ogg"},
		{"unknown", `{"type":"thing","mimeType":"application/x-weird","data":"` + b64 + `"}`, "attachment-1772366400000"},
		{"path name reduced", `{"name":"../../etc/passwd","data":"` + b64 + `"}`, "passwd"},
		{"windows path reduced", `{"name":"C:\\x\\evil.txt","data":"` + b64 + `"}`, "evil.txt"},
		{"dotdot name replaced", `{"name":"..","data":"` + b64 + `"}`, "attachment-1772366400000"},
		{"nul name replaced", `{"name":"a\u0000b","data":"` + b64 + `"}`, "attachment-1772366400000"},
		{"long name replaced", `{"name":"` + strings.Repeat("n", 300) + `","data":"` + b64 + `"}`, "attachment-1772366400000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			m := InboundMessage{ID: "m:1", Kind: KindChat, Content: json.RawMessage(`{"text":"see","attachments":[` + c.att + `]}`)}
			f.enqueue(m)
			var got struct {
				Attachments []map[string]any `json:"attachments"`
			}
			must(t, json.Unmarshal([]byte(f.one(InboundFile, "SELECT content FROM messages_in").(string)), &got))
			a := got.Attachments[0]
			if _, has := a["data"]; has {
				t.Error("data kept in content")
			}
			if a["localPath"] != "inbox/m:1/"+c.wantName {
				t.Fatalf("localPath %v, want inbox/m:1/%s", a["localPath"], c.wantName)
			}
			p := filepath.Join(f.dir, "inbox", "m:1", c.wantName)
			b, err := os.ReadFile(p)
			if err != nil || string(b) != "bytes" {
				t.Fatalf("file %q %v", b, err)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", fi.Mode().Perm())
			}
		})
	}
}

func TestInboundAttachmentCollisionsAndRefusals(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("x"))
	f := newFixture(t)
	two := `{"text":"t","attachments":[{"name":"a.png","data":"` + b64 + `"},{"name":"a.png","data":"` + b64 + `"},{"url":"https://x/y.png"}]}`
	f.enqueue(InboundMessage{ID: "m1", Kind: KindChat, Content: json.RawMessage(two)})
	for _, n := range []string{"a.png", "a-2.png"} {
		if _, err := os.Stat(filepath.Join(f.dir, "inbox", "m1", n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if c := f.one(InboundFile, "SELECT content FROM messages_in"); !strings.Contains(c.(string), `{"url":"https://x/y.png"}`) {
		t.Errorf("attachment without data changed: %v", c)
	}
	refusals := []struct {
		name  string
		setup func(t *testing.T, inbox string)
		att   string
		code  string
	}{
		{"symlinked message folder", func(t *testing.T, inbox string) {
			must(t, os.Symlink(t.TempDir(), filepath.Join(inbox, "m2")))
		}, `{"name":"a.txt","data":"` + b64 + `"}`, sessiondb.EINVALID},
		{"symlinked file", func(t *testing.T, inbox string) {
			must(t, os.MkdirAll(filepath.Join(inbox, "m2"), 0o700))
			must(t, os.Symlink(filepath.Join(t.TempDir(), "target"), filepath.Join(inbox, "m2", "a.txt")))
		}, `{"name":"a.txt","data":"` + b64 + `"}`, sessiondb.EINVALID},
		{"bad base64", func(*testing.T, string) {}, `{"name":"a.txt","data":"%%%"}`, sessiondb.EINVALID},
		{"data not a string", func(*testing.T, string) {}, `{"name":"a.txt","data":5}`, sessiondb.EINVALID},
		{"attachments not an array", func(*testing.T, string) {}, ``, sessiondb.EINVALID},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.setup(t, filepath.Join(f.dir, "inbox"))
			content := `{"attachments":[` + c.att + `]}`
			if c.att == "" {
				content = `{"attachments":{"data":"x"}}`
			}
			_, _, err := f.host.Enqueue(ctxb, f.ref, InboundMessage{ID: "m2", Kind: KindChat, Content: json.RawMessage(content)})
			wantCode(t, err, c.code)
			if n := f.one(InboundFile, "SELECT count(*) FROM messages_in"); n != int64(0) {
				t.Error("row inserted despite refusal")
			}
		})
	}
}

func TestSafeBaseName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a.txt", "a.txt"}, {"dir/a.txt", "a.txt"}, {`dir\a.txt`, "a.txt"}, {"../", ""}, {"..", ""}, {"", ""}, {"a\x01", ""},
	}
	for _, c := range cases {
		got, ok := SafeBaseName(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("SafeBaseName(%q) = %q, %v", c.in, got, ok)
		}
	}
}
