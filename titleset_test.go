package sessiondb

import (
	"strings"
	"testing"
)

// memTitles is a TitleTx over maps: each session's title and its
// compression parent; a title in raced is refused as a racing writer's.
type memTitles struct {
	titles map[string]string // id: title ("" none); a missing id is no session
	parent map[string]string // id: compression parent
	raced  string
}

func (m *memTitles) TitleHolder(title, id string) (string, error) {
	for s, t := range m.titles {
		if t == title && s != id {
			return s, nil
		}
	}
	return "", nil
}

func (m *memTitles) CompressionParent(id string) (string, error) { return m.parent[id], nil }

func (m *memTitles) ClearTitle(holder string) error {
	m.titles[holder] = ""
	return nil
}

func (m *memTitles) PutTitle(id, title string) (bool, bool, error) {
	if title != "" && title == m.raced {
		return false, true, nil
	}
	if _, ok := m.titles[id]; !ok {
		return false, false, nil
	}
	m.titles[id] = title
	return true, false, nil
}

func TestSetTitle(t *testing.T) {
	newTx := func() *memTitles {
		return &memTitles{
			titles: map[string]string{"a": "plan", "b": "", "c": "", "x": "other"},
			// a was compressed into b, b into c.
			parent: map[string]string{"b": "a", "c": "b"},
		}
	}
	t.Run("free title", func(t *testing.T) {
		tx := newTx()
		ok, err := SetTitle(tx, "b", "fresh")
		if err != nil || !ok || tx.titles["b"] != "fresh" {
			t.Fatalf("got %v, %v, title %q; want the title set", ok, err, tx.titles["b"])
		}
	})
	t.Run("held by another session", func(t *testing.T) {
		tx := newTx()
		ok, err := SetTitle(tx, "b", "other")
		if ErrorCode(err) != ECONFLICT || !strings.Contains(err.Error(), "by session x") || ok || tx.titles["x"] != "other" || tx.titles["b"] != "" {
			t.Fatalf("got %v, %v, titles %v; want conflict naming x and nothing changed", ok, err, tx.titles)
		}
	})
	t.Run("held, for an id that does not exist", func(t *testing.T) {
		tx := newTx()
		if _, err := SetTitle(tx, "nope", "plan"); ErrorCode(err) != ECONFLICT {
			t.Fatalf("got %v, want conflict even for an unknown id", err)
		}
	})
	t.Run("moves from a compression ancestor two hops up", func(t *testing.T) {
		tx := newTx()
		ok, err := SetTitle(tx, "c", "plan")
		if err != nil || !ok || tx.titles["c"] != "plan" || tx.titles["a"] != "" {
			t.Fatalf("got %v, %v, titles %v; want plan moved from a to c", ok, err, tx.titles)
		}
	})
	t.Run("not from a descendant", func(t *testing.T) {
		tx := newTx()
		tx.titles["c"], tx.titles["a"] = "tip", ""
		if _, err := SetTitle(tx, "a", "tip"); ErrorCode(err) != ECONFLICT {
			t.Fatalf("got %v, want conflict: c descends from a, it is not its ancestor", err)
		}
	})
	t.Run("a cycle ends", func(t *testing.T) {
		tx := newTx()
		tx.parent["a"] = "c" // damaged: a -> c -> b -> a
		if _, err := SetTitle(tx, "b", "other"); ErrorCode(err) != ECONFLICT {
			t.Fatalf("got %v, want conflict after the bounded walk", err)
		}
	})
	t.Run("lost race", func(t *testing.T) {
		tx := newTx()
		tx.raced = "fresh"
		ok, err := SetTitle(tx, "b", "fresh")
		if ErrorCode(err) != ECONFLICT || ok || !strings.Contains(err.Error(), "already in use") {
			t.Fatalf("got %v, %v; want conflict", ok, err)
		}
	})
	t.Run("clear and missing id", func(t *testing.T) {
		tx := newTx()
		ok, err := SetTitle(tx, "a", "")
		if err != nil || !ok || tx.titles["a"] != "" {
			t.Fatalf("clear: got %v, %v, title %q", ok, err, tx.titles["a"])
		}
		ok, err = SetTitle(tx, "nope", "fresh")
		if err != nil || ok {
			t.Fatalf("missing id: got %v, %v; want false, nil", ok, err)
		}
	})
}
