package mailbox

import (
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// migrateInbound brings an older inbound.db up to the current columns
// (contract section 13). It writes only when table_info shows a gap.
func migrateInbound(tx *sqlitedb.Tx) error {
	cols, err := columns(tx, "messages_in")
	if err != nil {
		return err
	}
	if len(cols) > 0 {
		if !cols["series_id"] {
			if err := tx.ExecScript(`ALTER TABLE messages_in ADD COLUMN series_id TEXT;
UPDATE messages_in SET series_id = id WHERE series_id IS NULL;
CREATE INDEX IF NOT EXISTS idx_messages_in_series ON messages_in(series_id);`); err != nil {
				return err
			}
		}
		for _, c := range []struct{ name, def string }{
			{"trigger", "trigger INTEGER NOT NULL DEFAULT 1"},
			{"source_session_id", "source_session_id TEXT"},
			{"on_wake", "on_wake INTEGER NOT NULL DEFAULT 0"},
		} {
			if !cols[c.name] {
				if err := tx.ExecScript("ALTER TABLE messages_in ADD COLUMN " + c.def); err != nil {
					return err
				}
			}
		}
	}
	dcols, err := columns(tx, "delivered")
	if err != nil {
		return err
	}
	if len(dcols) > 0 {
		if !dcols["platform_message_id"] {
			if err := tx.ExecScript("ALTER TABLE delivered ADD COLUMN platform_message_id TEXT"); err != nil {
				return err
			}
		}
		if !dcols["status"] {
			if err := tx.ExecScript("ALTER TABLE delivered ADD COLUMN status TEXT NOT NULL DEFAULT 'delivered'"); err != nil {
				return err
			}
		}
	}
	acols, err := columns(tx, "delivery_attempts")
	if err != nil {
		return err
	}
	if len(acols) == 0 && len(cols) > 0 {
		return tx.ExecScript(deliveryAttemptsDDL)
	}
	return nil
}

// migrateOutbound is the agent's lazy migration of outbound.db.
func migrateOutbound(tx *sqlitedb.Tx) error {
	cols, err := columns(tx, "session_state")
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		if err := tx.ExecScript(sessionStateDDL); err != nil {
			return err
		}
	} else if !cols["updated_at"] {
		if err := tx.ExecScript("ALTER TABLE session_state ADD COLUMN updated_at TEXT NOT NULL DEFAULT ''"); err != nil {
			return err
		}
	}
	ccols, err := columns(tx, "container_state")
	if err != nil {
		return err
	}
	if len(ccols) == 0 {
		return tx.ExecScript(containerStateDDL)
	}
	return nil
}
