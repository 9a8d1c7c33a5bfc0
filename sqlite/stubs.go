package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

func notImplemented() error { return sessiondb.Errorf(sessiondb.EINTERNAL, "not implemented") }

func (s *Store) CreateSession(ctx context.Context, n sessiondb.NewSession) (string, error) {
	return "", notImplemented()
}
func (s *Store) EnsureSession(ctx context.Context, id, source, model string) error {
	return notImplemented()
}
func (s *Store) EndSession(ctx context.Context, id, reason string) error { return notImplemented() }
func (s *Store) ReopenSession(ctx context.Context, id string) error      { return notImplemented() }
func (s *Store) UpdateSystemPrompt(ctx context.Context, id, prompt string) error {
	return notImplemented()
}
func (s *Store) UpdateTokenCounts(ctx context.Context, id string, u sessiondb.TokenUpdate) error {
	return notImplemented()
}
func (s *Store) GetSession(ctx context.Context, id string) (*sessiondb.Session, error) {
	return nil, notImplemented()
}
func (s *Store) ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error) {
	return "", notImplemented()
}
func (s *Store) SearchSessions(ctx context.Context, source string, limit, offset int) ([]sessiondb.Session, error) {
	return nil, notImplemented()
}
func (s *Store) SessionCount(ctx context.Context, source string) (int64, error) {
	return 0, notImplemented()
}
func (s *Store) MessageCount(ctx context.Context, sessionID string) (int64, error) {
	return 0, notImplemented()
}
func (s *Store) CompressionTip(ctx context.Context, id string) (string, error) {
	return "", notImplemented()
}
func (s *Store) ListSessionsRich(ctx context.Context, f sessiondb.RichFilter) ([]sessiondb.RichSession, error) {
	return nil, notImplemented()
}
func (s *Store) SetSessionTitle(ctx context.Context, id, title string) (bool, error) {
	return false, notImplemented()
}
func (s *Store) GetSessionTitle(ctx context.Context, id string) (string, bool, error) {
	return "", false, notImplemented()
}
func (s *Store) GetSessionByTitle(ctx context.Context, title string) (*sessiondb.Session, error) {
	return nil, notImplemented()
}
func (s *Store) ResolveSessionByTitle(ctx context.Context, title string) (string, error) {
	return "", notImplemented()
}
func (s *Store) NextTitleInLineage(ctx context.Context, title string) (string, error) {
	return "", notImplemented()
}
func (s *Store) ForkSession(ctx context.Context, src string, atMessageID int64, n sessiondb.NewSession) (string, error) {
	return "", notImplemented()
}
func (s *Store) ClearMessages(ctx context.Context, id string) error { return notImplemented() }
func (s *Store) DeleteSession(ctx context.Context, id string) (bool, error) {
	return false, notImplemented()
}
func (s *Store) PruneSessions(ctx context.Context, olderThanDays float64, source string) (int, error) {
	return 0, notImplemented()
}
func (s *Store) AppendMessage(ctx context.Context, m sessiondb.NewMessage) (int64, error) {
	return 0, notImplemented()
}
func (s *Store) GetMessages(ctx context.Context, sessionID string) ([]sessiondb.Message, error) {
	return nil, notImplemented()
}
func (s *Store) GetMessagesPage(ctx context.Context, sessionID string, p sessiondb.Page) (*sessiondb.MessagePage, error) {
	return nil, notImplemented()
}
func (s *Store) GetMessagesAsConversation(ctx context.Context, sessionID string, lastN int) ([]sessiondb.ConversationItem, error) {
	return nil, notImplemented()
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
func (s *Store) SchemaVersion(ctx context.Context) (int, error) { return 0, notImplemented() }
func (s *Store) IntegrityCheck(ctx context.Context) ([]string, error) {
	return nil, notImplemented()
}
func (s *Store) FTSIntegrityCheck(ctx context.Context) error { return notImplemented() }
func (s *Store) RebuildFTS(ctx context.Context) error        { return notImplemented() }
func (s *Store) OptimizeFTS(ctx context.Context) error       { return notImplemented() }
func (s *Store) ImportSession(ctx context.Context, rec map[string]any) (bool, error) {
	return false, notImplemented()
}
func (s *Store) Usage(ctx context.Context, f sessiondb.UsageFilter) (*sessiondb.UsageReport, error) {
	return nil, notImplemented()
}
func (s *Store) SQLiteVersion(ctx context.Context) (string, error) { return "", notImplemented() }
