package cli

import (
	"errors"
	"testing"

	"github.com/sessiondb/sessiondb"
)

type closer struct{ err error }

func (c closer) Close() error { return c.err }

// TestCloseInto: a failure to close is reported, named, only when nothing
// failed before it; an earlier failure is kept as it was.
func TestCloseInto(t *testing.T) {
	first, lost := errors.New("first"), errors.New("disk full")
	cases := []struct {
		name      string
		before    error
		closeErr  error
		want      string
		wantCause error
	}{
		{"both fine", nil, nil, "", nil},
		{"close fails", nil, lost, "close the store: disk full", lost},
		{"the first failure wins", first, lost, "first", first},
		{"close fine after a failure", first, nil, "first", first},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.before
			CloseInto(&err, closer{tc.closeErr}, "close the store")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.wantCause) {
				t.Fatalf("err = %v, want %q wrapping %v", err, tc.want, tc.wantCause)
			}
		})
	}
	err := error(nil)
	CloseInto(&err, closer{sessiondb.Errorf(sessiondb.EBUSY, "locked")}, "close")
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY {
		t.Errorf("code %q, want the close error's own (busy)", sessiondb.ErrorCode(err))
	}
}
