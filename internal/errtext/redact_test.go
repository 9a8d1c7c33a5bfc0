package errtext

import "testing"

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
