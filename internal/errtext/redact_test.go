package errtext

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://hooks.example.com", "https://hooks.example.com"},
		{"https://hooks.example.com/", "https://hooks.example.com"},
		{"http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/…"},
		{"https://user:s3cret@hooks.example.com", "https://hooks.example.com/…"},
		{"https://hooks.example.com?token=s3cret", "https://hooks.example.com/…"},
		{"https://hooks.slack.com/services/T00/B00/s3cret", "https://hooks.slack.com/…"},
		{"https://hooks.example.com/#s3cret", "https://hooks.example.com/…"},
		{"not a url s3cret", "(a URL)"},
		{"://s3cret", "(a URL)"},
		{"", "(a URL)"},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactCommand(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"deliver.sh", "deliver.sh"},
		{"curl -H 'Authorization: Bearer s3cret' https://x", "curl …"},
		{"TOKEN=s3cret ./deliver.sh", "…"},
		{"  /usr/bin/env  python3 x.py", "/usr/bin/env …"},
	} {
		if got := RedactCommand(tc.in); got != tc.want {
			t.Errorf("RedactCommand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactPassword(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		has      bool
	}{
		{"/home/me/.hermes/state.db", "/home/me/.hermes/state.db", false},
		{"state:with:colons@and-at.db", "state:with:colons@and-at.db", false},
		{"postgres://agent@db.internal/sessions?search_path=a", "postgres://agent@db.internal/sessions?search_path=a", false},
		{"postgres://agent:@db.internal/sessions", "postgres://agent:@db.internal/sessions", false},
		{"postgres://agent:s3cret@db.internal:5432/sessions", "postgres://agent:xxxxx@db.internal:5432/sessions", true},
		{"postgresql://agent:p%40ss@db/s?sslmode=disable", "postgresql://agent:xxxxx@db/s?sslmode=disable", true},
		{"postgres://db/s?user=agent&password=s3cret", "postgres://db/s?password=xxxxx&user=agent", true},
		{"postgres://db/s?sslpassword=s3cret", "postgres://db/s?sslpassword=xxxxx", true},
		{"postgres://agent:s3cret@db:notaport/s", "(a URL)", true},
		{"postgres://db:notaport/s", "(a URL)", false},
	} {
		if got := RedactPassword(tc.in); got != tc.want || strings.Contains(got, "s3cret") {
			t.Errorf("RedactPassword(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := HasPassword(tc.in); got != tc.has {
			t.Errorf("HasPassword(%q) = %v, want %v", tc.in, got, tc.has)
		}
	}
}

// TestDropPassword: the location printed in a command for the user to run
// keeps its user, host, database and parameters, without the password.
func TestDropPassword(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.hermes/state.db":                                  "/home/me/.hermes/state.db",
		"postgres://agent@db.internal/sessions":                      "postgres://agent@db.internal/sessions",
		"postgres://agent:s3cret@db.internal:5432/sessions":          "postgres://agent@db.internal:5432/sessions",
		"postgres://db/s?user=agent&password=s3cret&sslmode=disable": "postgres://db/s?sslmode=disable&user=agent",
		"postgres://db/s?SSLPassword=s3cret":                         "postgres://db/s",
		"postgres://agent:s3cret@db:notaport/s":                      "(a URL)",
	} {
		if got := DropPassword(in); got != want {
			t.Errorf("DropPassword(%q) = %q, want %q", in, got, want)
		}
	}
}
