package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

func notImplemented() error { return sessiondb.Errorf(sessiondb.EINTERNAL, "not implemented") }

func (s *Store) ForkSession(ctx context.Context, src string, atMessageID int64, n sessiondb.NewSession) (string, error) {
	return "", notImplemented()
}
func (s *Store) SearchMessages(ctx context.Context, query string, f sessiondb.SearchFilter) ([]sessiondb.SearchHit, error) {
	return nil, notImplemented()
}
func (s *Store) ExportSession(ctx context.Context, id string) (map[string]any, error) {
	return nil, notImplemented()
}
func (s *Store) ExportAll(ctx context.Context, source string, yield func(map[string]any) error) error {
	return notImplemented()
}
func (s *Store) ImportSession(ctx context.Context, rec map[string]any) (bool, error) {
	return false, notImplemented()
}
func (s *Store) Usage(ctx context.Context, f sessiondb.UsageFilter) (*sessiondb.UsageReport, error) {
	return nil, notImplemented()
}
