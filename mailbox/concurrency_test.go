package mailbox

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

func TestConcurrentWritersInOneProcess(t *testing.T) {
	const goroutines, each = 8, 25
	cases := []struct {
		name   string
		parity int64
		write  func(f *fixture, g, i int) (int64, error)
	}{
		{"host enqueues", 0, func(f *fixture, g, i int) (int64, error) {
			seq, _, err := f.host.Enqueue(ctxb, f.ref, chat(fmt.Sprintf("g%d-%d", g, i), "x"))
			return seq, err
		}},
		{"agent sends", 1, func(f *fixture, g, i int) (int64, error) {
			return f.agent.Send(ctxb, OutboundMessage{ID: fmt.Sprintf("g%d-%d", g, i), Content: json.RawMessage(`{"text":"x"}`)})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.openAgent()
			var mu sync.Mutex
			seen := map[int64]bool{}
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 0; i < each; i++ {
						seq, err := c.write(f, g, i)
						mu.Lock()
						if err != nil {
							t.Errorf("write: %v", err)
						} else if seen[seq] || seq%2 != c.parity {
							t.Errorf("seq %d repeated or of the wrong parity", seq)
						}
						seen[seq] = true
						mu.Unlock()
					}
				}(g)
			}
			wg.Wait()
			if len(seen) != goroutines*each {
				t.Fatalf("%d distinct seqs, want %d", len(seen), goroutines*each)
			}
		})
	}
}
