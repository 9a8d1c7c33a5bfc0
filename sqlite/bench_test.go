package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// Benchmarks keep their corpora small so -benchtime 1x is quick; the
// whole-system figures come from `sessiondb bench`.

func BenchmarkAppendMessage(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, filepath.Join(b.TempDir(), "state.db"), Options{})
	mustCreate(b, s, "a", "cli")
	content := "a typical assistant answer with a few dozen words about docker and deploys"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: &content}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendMessageParallel measures group commit: 16 goroutines
// append at once and share transactions.
func BenchmarkAppendMessageParallel(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, filepath.Join(b.TempDir(), "state.db"), Options{})
	for g := 0; g < 16; g++ {
		mustCreate(b, s, fmt.Sprintf("s%d", g), "cli")
	}
	content := "a typical assistant answer with a few dozen words about docker and deploys"
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + 15) / 16
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			id := fmt.Sprintf("s%d", g)
			for i := 0; i < per; i++ {
				if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "assistant", Content: &content}); err != nil {
					b.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, filepath.Join(b.TempDir(), "state.db"), Options{})
	fillSearchCorpus(b, s, 20, 50)
	queries := []string{"docker", "alpha omega", "kubernetes OR deploy", "ep*"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.SearchMessages(ctx, queries[i%len(queries)], sessiondb.SearchFilter{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetMessages(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, filepath.Join(b.TempDir(), "state.db"), Options{})
	fillSearchCorpus(b, s, 2, 500)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ms, err := s.GetMessages(ctx, "s001")
		if err != nil || len(ms) != 500 {
			b.Fatal(len(ms), err)
		}
	}
}

// BenchmarkSearchHugeMessage searches one 50 MB message in which the term
// occurs 1,000,000 times (issue 8: FTS5's own snippet() made this grow with
// the square of the occurrences; a 2 MB message took eleven minutes). The
// figure to watch is ns/op, which should stay well under a second.
func BenchmarkSearchHugeMessage(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, filepath.Join(b.TempDir(), "state.db"), Options{})
	mustCreate(b, s, "huge", "cli")
	const unit = "word lorem ipsum dolor sit amet consectetur adipi " // 50 bytes, one "word"
	content := strings.Repeat(unit, 1_000_000)
	mustAppend(b, s, sessiondb.NewMessage{SessionID: "huge", Role: "user", Content: &content})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hits, err := s.SearchMessages(ctx, "word", sessiondb.SearchFilter{Limit: 1})
		if err != nil || len(hits) != 1 || !strings.HasPrefix(hits[0].Snippet, ">>>word<<< lorem") {
			b.Fatalf("hits %v, err %v", hits, err)
		}
	}
}
