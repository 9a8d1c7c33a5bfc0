package sqlitedb

import (
	"fmt"

	"github.com/sessiondb/sessiondb"
)

// SQLite primary result codes we act on (https://www.sqlite.org/rescode.html).
const (
	codeError      = 1
	codeBusy       = 5
	codeLocked     = 6
	codeReadOnly   = 8
	codeInterrupt  = 9
	codeIOErr      = 10
	codeFull       = 13
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
	codeConstraintTrigger    = 1811
	codeReadOnlyRollback     = 776
)

// Code is THE classification of errors met while using SQLite into
// sessiondb error codes. The history store, the mailbox files and the host
// daemon all classify through it (directly or with Wrap), so one failure
// carries one code whichever package met it. A call site overrides it only
// where it knows more than the error does, and says why (a constraint that
// fails a delete is a conflict; a damaged file met at open is the caller's
// input).
//
//   - nil: "".
//   - an error that already carries a code (a *sessiondb.Error): that code.
//   - context.Canceled, context.DeadlineExceeded and SQLITE_INTERRUPT (how
//     the drivers stop a statement whose context ended): busy. The work
//     stopped for want of time, not for bad input or damage, and may
//     succeed if tried again, like a lock wait that ran out; the writer has
//     always reported an abandoned write so. Wrap keeps the context error in
//     the chain, so errors.Is(err, context.Canceled) still tells a caller
//     that cancelled on purpose.
//   - SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY_ROLLBACK (a hot journal
//     only a writer can roll back): busy.
//   - UNIQUE or PRIMARY KEY constraint, and a trigger's RAISE (a rule in the
//     file refused the change): conflict.
//   - FOREIGN KEY constraint (the row names a parent that does not exist),
//     SQLITE_READONLY (a write through a read-only open), SQLITE_NOTADB (the
//     path names something that is not a SQLite database): invalid.
//   - anything else, SQLite's or not (SQLITE_FULL, I/O errors, SQLITE_CORRUPT,
//     NOT NULL and CHECK constraints, which our own validation should have
//     caught): internal.
func Code(err error) string {
	if err == nil {
		return ""
	}
	if c := sessiondb.CarriedCode(err); c != "" {
		return c
	}
	primary, extended, ok := ResultCode(err)
	if !ok {
		return sessiondb.EINTERNAL
	}
	switch extended {
	case codeReadOnlyRollback:
		return sessiondb.EBUSY
	case codeConstraintUnique, codeConstraintPrimaryKey, codeConstraintTrigger:
		return sessiondb.ECONFLICT
	case codeConstraintForeignKey:
		return sessiondb.EINVALID
	}
	switch primary {
	case codeBusy, codeLocked, codeInterrupt:
		return sessiondb.EBUSY
	case codeReadOnly, codeNotADB:
		return sessiondb.EINVALID
	}
	return sessiondb.EINTERNAL
}

// Wrap classifies err with Code and adds context (format and args, as in
// fmt.Sprintf); err stays reachable with errors.Is and errors.As. It returns
// nil for a nil err.
func Wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return sessiondb.Wrap(Code(err), err, "%s", fmt.Sprintf(format, args...))
}

// ResultCode returns the primary and extended SQLite result codes of err,
// read from the driver's error value (never from message text). ok is false
// when err did not come from SQLite.
func ResultCode(err error) (primary, extended int, ok bool) {
	ext, ok := errorCode(err)
	if !ok {
		return 0, 0, false
	}
	return ext & 0xff, ext, true
}

func primaryIs(err error, codes ...int) bool {
	p, _, ok := ResultCode(err)
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
	_, ext, ok := ResultCode(err)
	return ok && (ext == codeConstraintUnique || ext == codeConstraintPrimaryKey)
}

// IsForeignKey reports a FOREIGN KEY violation.
func IsForeignKey(err error) bool {
	_, ext, ok := ResultCode(err)
	return ok && ext == codeConstraintForeignKey
}

// IsCantOpen reports SQLITE_CANTOPEN ("unable to open database file") and
// SQLITE_READONLY: SQLite could not open a file (the database or one of its
// journal files) the way it needed.
func IsCantOpen(err error) bool { return primaryIs(err, codeCantOpen, codeReadOnly) }

// IsNotADB reports SQLITE_NOTADB: the file is not a SQLite database.
func IsNotADB(err error) bool { return primaryIs(err, codeNotADB) }

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
	_, ext, ok := ResultCode(err)
	return ok && ext == codeReadOnlyRollback
}

// IsWALUnsupported reports the errors enabling WAL gives on file systems
// without shared memory or POSIX locks (NFS, SMB, some FUSE mounts).
func IsWALUnsupported(err error) bool {
	return primaryIs(err, codeProtocol, codeAuth, codeIOErr, codeCantOpen)
}

// IsFull reports SQLITE_FULL: the disk, or the file's max_page_count, is full.
func IsFull(err error) bool { return primaryIs(err, codeFull) }
