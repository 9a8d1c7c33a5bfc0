package sessiondb

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// exportFrom exports from a map of id to record; an id not in it is
// not_found, as a session deleted after the listing.
func exportFrom(recs map[string]map[string]any) func(context.Context, string) (map[string]any, error) {
	return func(_ context.Context, id string) (map[string]any, error) {
		if id == "broken" {
			return nil, Errorf(EINTERNAL, "read %s: disk on fire", id)
		}
		r, ok := recs[id]
		if !ok {
			return nil, Errorf(ENOTFOUND, "no session %s", id)
		}
		return r, nil
	}
}

func TestExportEachPassesOverDeletedSessionsInOrder(t *testing.T) {
	recs := map[string]map[string]any{"a": {"id": "a"}, "c": {"id": "c"}}
	var got []any
	err := ExportEach(context.Background(), []string{"c", "b", "a"}, exportFrom(recs), func(r map[string]any) error {
		got = append(got, r["id"])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"c", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("yielded %v, want %v (b was deleted since the listing)", got, want)
	}
}

func TestExportEachStopsAtTheFirstError(t *testing.T) {
	recs := map[string]map[string]any{"a": {"id": "a"}, "b": {"id": "b"}}
	stop := errors.New("reader went away")
	n := 0
	err := ExportEach(context.Background(), []string{"a", "b"}, exportFrom(recs), func(map[string]any) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("yield's error: got %v after %d yields, want %v after 1", err, n, stop)
	}
	n = 0
	err = ExportEach(context.Background(), []string{"a", "broken", "b"}, exportFrom(recs), func(map[string]any) error {
		n++
		return nil
	})
	if ErrorCode(err) != EINTERNAL || n != 1 {
		t.Fatalf("export's error: got %v (%s) after %d yields, want internal after 1", err, ErrorCode(err), n)
	}
}

func TestExportEachStopsBusyWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	recs := map[string]map[string]any{"a": {"id": "a"}, "b": {"id": "b"}}
	n := 0
	err := ExportEach(ctx, []string{"a", "b"}, exportFrom(recs), func(map[string]any) error {
		n++
		cancel()
		return nil
	})
	if ErrorCode(err) != EBUSY || !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("got %v (%s) after %d yields, want busy wrapping context.Canceled after 1", err, ErrorCode(err), n)
	}
}
