package sqlitedb

// SQLite primary result codes we act on (https://www.sqlite.org/rescode.html).
const (
	codeError      = 1
	codeBusy       = 5
	codeLocked     = 6
	codeReadOnly   = 8
	codeIOErr      = 10
	codeCorrupt    = 11
	codeCantOpen   = 14
	codeProtocol   = 15
	codeConstraint = 19
	codeAuth       = 23
	codeNotADB     = 26

	// extended codes
	codeConstraintUnique     = 2067
	codeConstraintPrimaryKey = 1555
	codeConstraintForeignKey = 787
	codeReadOnlyRollback     = 776
)

// Code returns the primary and extended SQLite result codes of err, read from
// the driver's error value (never from message text). ok is false when err
// did not come from SQLite.
func Code(err error) (primary, extended int, ok bool) {
	ext, ok := errorCode(err)
	if !ok {
		return 0, 0, false
	}
	return ext & 0xff, ext, true
}

func primaryIs(err error, codes ...int) bool {
	p, _, ok := Code(err)
	if !ok {
		return false
	}
	for _, c := range codes {
		if p == c {
			return true
		}
	}
	return false
}

// IsBusy reports SQLITE_BUSY or SQLITE_LOCKED: another connection holds the
// lock, and waiting may help.
func IsBusy(err error) bool { return primaryIs(err, codeBusy, codeLocked) }

// IsConstraint reports a constraint violation (unique, foreign key, not null).
func IsConstraint(err error) bool { return primaryIs(err, codeConstraint) }

// IsUnique reports a UNIQUE or PRIMARY KEY violation.
func IsUnique(err error) bool {
	_, ext, ok := Code(err)
	return ok && (ext == codeConstraintUnique || ext == codeConstraintPrimaryKey)
}

// IsForeignKey reports a FOREIGN KEY violation.
func IsForeignKey(err error) bool {
	_, ext, ok := Code(err)
	return ok && ext == codeConstraintForeignKey
}

// IsCorrupt reports a file that is not a database or is damaged.
func IsCorrupt(err error) bool { return primaryIs(err, codeCorrupt, codeNotADB) }

// IsQueryError reports the plain SQLITE_ERROR that FTS5 raises for a query it
// cannot parse (as opposed to busy, corrupt or I/O trouble).
func IsQueryError(err error) bool { return primaryIs(err, codeError) }

// IsReadOnly reports a write attempted through a read-only connection or on a
// read-only file, and SQLITE_READONLY_ROLLBACK (a hot journal a read-only
// connection cannot roll back).
func IsReadOnly(err error) bool { return primaryIs(err, codeReadOnly) }

// IsReadOnlyRollback reports SQLITE_READONLY_ROLLBACK.
func IsReadOnlyRollback(err error) bool {
	_, ext, ok := Code(err)
	return ok && ext == codeReadOnlyRollback
}

// IsWALUnsupported reports the errors enabling WAL gives on file systems
// without shared memory or POSIX locks (NFS, SMB, some FUSE mounts).
func IsWALUnsupported(err error) bool {
	return primaryIs(err, codeProtocol, codeAuth, codeIOErr, codeCantOpen)
}
