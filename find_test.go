package sessiondb

import "testing"

// TestPrefixMatch: ResolveSessionID's answer from the sessions whose id
// starts with the prefix.
func TestPrefixMatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		want string
		code string
		msg  string
	}{
		{name: "none", code: ENOTFOUND, msg: `no session id starts with "ab"`},
		{name: "one", ids: []string{"abc"}, want: "abc"},
		{name: "two", ids: []string{"abd", "abc"}, code: ECONFLICT, msg: `session id prefix "ab" is ambiguous: it matches abd, abc and more`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PrefixMatch("ab", tc.ids)
			if got != tc.want || ErrorCode(err) != tc.code || (err != nil && err.Error() != tc.msg) {
				t.Errorf("PrefixMatch(ab, %q) = %q, %v; want %q, code %q %q", tc.ids, got, err, tc.want, tc.code, tc.msg)
			}
		})
	}
}
