package sqlitedb

import "fmt"

// onRollback makes SQLite call f whenever a transaction on the driver
// connection dc ends in a rollback, explicit or forced by an error (not for
// ROLLBACK TO a savepoint); nil removes the hook. Both drivers' connections
// have the method; only the type of its argument differs (rollbackHook).
func onRollback(dc any, f func()) error {
	c, ok := dc.(interface{ RegisterRollbackHook(rollbackHook) })
	if !ok {
		return fmt.Errorf("driver connection %T has no rollback hook", dc)
	}
	c.RegisterRollbackHook(f)
	return nil
}
