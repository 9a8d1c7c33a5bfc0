package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/storetest"
)

// seedRegistry makes a central file with 10 agent groups, chats chats and
// one shared session per (group, chat): 10 × chats sessions, written in
// one transaction behind the registry's back so the benchmark measures
// resolution, not seeding.
func seedRegistry(b *testing.B, chats int) (*sqlite.Central, []string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "v2.db")
	openCentral(b, path, nil).Close()
	db := sqlitetest.Open(b, path)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	const groups = 10
	for g := 0; g < groups; g++ {
		if _, err := tx.Exec("INSERT INTO agent_groups VALUES (?, ?, ?, NULL, '2026-05-18T10:00:00.000Z')", fmt.Sprintf("ag-%d", g), "g", fmt.Sprintf("g%d", g)); err != nil {
			b.Fatal(err)
		}
	}
	var mgs []string
	for c := 0; c < chats; c++ {
		mg := fmt.Sprintf("mg-%d", c)
		mgs = append(mgs, mg)
		if _, err := tx.Exec("INSERT INTO messaging_groups (id, channel_type, platform_id, is_group, created_at) VALUES (?, 'slack', ?, 1, '2026-05-18T10:00:00.000Z')", mg, mg); err != nil {
			b.Fatal(err)
		}
		for g := 0; g < groups; g++ {
			if _, err := tx.Exec("INSERT INTO sessions (id, agent_group_id, messaging_group_id, created_at) VALUES (?, ?, ?, '2026-05-18T10:00:00.000Z')",
				fmt.Sprintf("sess-%d-%d", g, c), fmt.Sprintf("ag-%d", g), mg); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	db.Close()
	c := openCentral(b, path, testkit.NewClock(storetest.Epoch).Now)
	b.Cleanup(func() { c.Close() })
	return c, mgs
}

// BenchmarkResolveSession measures session resolution with 10,000
// sessions over 1,000 chats (SESSIONDB_BENCH_CHATS changes the chat count):
// hits from one goroutine and from 8, and misses, each of which creates a
// per-thread session in its own write transaction.
func BenchmarkResolveSession(b *testing.B) {
	chats := testkit.EnvInt("SESSIONDB_BENCH_CHATS", 1000)
	c, mgs := seedRegistry(b, chats)
	ctx := context.Background()
	lookup := func(r *rand.Rand) sessiondb.SessionLookup {
		return sessiondb.SessionLookup{AgentGroupID: fmt.Sprintf("ag-%d", r.IntN(10)), MessagingGroupID: mgs[r.IntN(len(mgs))], Mode: sessiondb.ModeShared}
	}
	b.Run("hit", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 1))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, created, err := c.ResolveSession(ctx, lookup(r)); err != nil || created {
				b.Fatalf("resolve: created %v, %v", created, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resolutions/s")
	})
	b.Run("hit-parallel", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(rand.Uint64(), 2))
			for pb.Next() {
				if _, _, err := c.ResolveSession(ctx, lookup(r)); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resolutions/s")
	})
	runs := 0
	b.Run("create", func(b *testing.B) {
		runs++ // the benchmark body runs once per b.N tried: new threads each time
		r := rand.New(rand.NewPCG(3, 3))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			l := lookup(r)
			l.Mode, l.ThreadID = sessiondb.ModePerThread, fmt.Sprintf("t-%d-%d", runs, i)
			if _, created, err := c.ResolveSession(ctx, l); err != nil || !created {
				b.Fatalf("resolve: created %v, %v", created, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resolutions/s")
	})
}
