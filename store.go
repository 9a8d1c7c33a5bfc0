package sessiondb

// Store is the whole history store: what every backend (sqlite now,
// postgres later) implements and storetest holds it to. Backend-specific
// upkeep (SQLiteMaintainer) is not part of it; faces ask for it with a type
// assertion.
type Store interface {
	SessionService
	MessageService
	ImportService
	UsageService
	RetentionService
	Close() error
}
