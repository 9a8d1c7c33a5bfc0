package sqlite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// hermes21Chains is a state.db Hermes wrote at schema 21, whose
// compression chains each have their newest activity somewhere other than
// their root (testdata/hermes21chains/make_chains.py), with Hermes' own
// listing of it by last activity.
const hermes21Chains = "testdata/hermes21chains"

// Our listing by last activity is Hermes' order_by_last_active, row for
// row: on Hermes' own file (read as it is), and on the same sessions copied
// into a file of ours (read through sessiondb_last_active), with and
// without a source. A chain takes the place of its newest activity
// anywhere on it (a continuation's, a middle hop's, a child's that spoke
// before its parent ended by compression), never of a /branch child's or a
// delegate's.
func TestHermes21ListingByChainActivity(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(hermes21Chains, "listing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Listings map[string][]struct {
			ID string `json:"id"`
		} `json:"list_sessions_rich"`
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(hermes21Chains, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hermesFile := filepath.Join(dir, "hermes.db")
	if err := os.WriteFile(hermesFile, src, 0o600); err != nil {
		t.Fatal(err)
	}
	theirs := openTestStore(t, hermesFile, Options{})
	ours := openTestStore(t, filepath.Join(dir, "ours.db"), Options{})
	if _, err := sessiondb.Copy(ctx, theirs, ours, sessiondb.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if ours.si.newer() || !ours.q.lastActive || theirs.q.lastActive {
		t.Fatalf("the copy is to be read through sessiondb_last_active and Hermes' file without it: ours %v, theirs %v", ours.q.lastActive, theirs.q.lastActive)
	}
	for name, source := range map[string]string{"order_by_last_active": "", "cli": "cli", "telegram": "telegram"} {
		var ids []string
		for _, r := range want.Listings[name] {
			ids = append(ids, r.ID)
		}
		if len(ids) == 0 {
			t.Fatalf("listing.json has no listing %q", name)
		}
		for label, s := range map[string]*Store{"Hermes' file": theirs, "our copy": ours} {
			got := []string{}
			p, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive, Source: source, Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Sessions {
				got = append(got, r.ID)
			}
			if !reflect.DeepEqual(got, ids) {
				t.Errorf("%s, %s: ours %v, Hermes %v", label, name, got, ids)
			}
		}
	}
}
