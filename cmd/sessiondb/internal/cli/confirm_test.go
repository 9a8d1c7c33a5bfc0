package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestAsk(t *testing.T) {
	tests := []struct {
		answer string
		want   bool
	}{
		{"y\n", true}, {"YES\n", true}, {" yes ", true}, {"n\n", false}, {"\n", false}, {"", false}, {"yep\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.answer, func(t *testing.T) {
			var asked bytes.Buffer
			if got := Ask(strings.NewReader(tc.answer), &asked, "Delete? "); got != tc.want {
				t.Errorf("Ask(%q) = %v, want %v", tc.answer, got, tc.want)
			}
			if asked.String() != "Delete? " {
				t.Errorf("question written: %q", asked.String())
			}
		})
	}
}
