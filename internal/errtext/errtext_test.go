package errtext

import "testing"

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"longer than ten", 10, "longer tha…"},
		{"", 0, ""},
	} {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
