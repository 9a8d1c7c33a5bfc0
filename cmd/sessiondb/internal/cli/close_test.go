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

// TestWith: fn runs on what open returned, which is closed after it; a
// failed open runs nothing and closes nothing.
func TestWith(t *testing.T) {
	var ran, closed int
	c := &countingCloser{closed: &closed}
	err := With(func() (*countingCloser, error) { return c, nil }, "close it", func(got *countingCloser) error {
		ran++
		if got != c || closed != 0 {
			t.Errorf("fn got %p (closed %d times), want %p still open", got, closed, c)
		}
		return nil
	})
	if err != nil || ran != 1 || closed != 1 {
		t.Fatalf("err %v, ran %d, closed %d; want nil, 1, 1", err, ran, closed)
	}
	failed := errors.New("no such store")
	err = With(func() (*countingCloser, error) { return nil, failed }, "close it", func(*countingCloser) error {
		ran++
		return nil
	})
	if !errors.Is(err, failed) || ran != 1 || closed != 1 {
		t.Fatalf("failed open: err %v, ran %d, closed %d; want the open's error and nothing run or closed", err, ran, closed)
	}
}

type countingCloser struct{ closed *int }

func (c *countingCloser) Close() error { *c.closed++; return nil }
