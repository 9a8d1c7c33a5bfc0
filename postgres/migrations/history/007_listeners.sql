-- The processes listening for appends (notify.go), one row per listening
-- connection: its backend's pid and start, which name it for as long as
-- it lives (a pid alone is reused). An append notifies only while a row
-- exists (notifySQL): a notifying transaction takes PostgreSQL's
-- cluster-wide notify lock through its commit, and with no one listening
-- every append paid for that turn for nothing.
--
-- A listener inserts its row in the transaction that runs its LISTEN and
-- deletes it when it stops. A process killed before it could leaves its
-- row behind; the next listener to start deletes rows whose backend is
-- gone. Until then the stale row only costs notifications.
CREATE TABLE sessiondb_listeners (
    pid integer NOT NULL,
    backend_start timestamptz NOT NULL,
    since timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pid, backend_start)
);
