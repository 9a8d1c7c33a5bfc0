package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/sessiondb/sessiondb"
)

// workloadVersion is the version of the shared workload format (see
// ../shared/bench/workload.py) this replay understands.
const workloadVersion = 2

// maxWorkloadLine bounds one JSONL record; the generator's messages are at
// most a few KB, so anything near this is not a workload.
const maxWorkloadLine = 16 << 20

// workload is a parsed benchmark workload, held in memory so that reading
// and decoding the file never counts toward a timed phase.
type workload struct {
	sessions    []wlSession
	messages    []wlMessage // in append order
	queries     []wlQuery
	getMessages string      // session id of the get_messages record, "" when absent
	workers     []*wlWorker // sorted by worker number
	concRecords int         // number of concurrent_message records
}

type wlSession struct {
	ID, Source, Model string
}

// wlMessage is one message or concurrent_message record, already in the
// shape AppendMessage takes.
type wlMessage struct {
	Seq        int64
	SessionID  string
	Role       string
	Content    *string
	ToolCalls  []any // nil when the record has null
	ToolCallID *string
	ToolName   *string
}

// newMessage converts m for AppendMessage. A nil ToolCalls slice must stay
// an untyped nil: a typed nil slice inside `any` is not nil.
func (m *wlMessage) newMessage() sessiondb.NewMessage {
	nm := sessiondb.NewMessage{
		SessionID:  m.SessionID,
		Role:       m.Role,
		Content:    m.Content,
		ToolCallID: m.ToolCallID,
		ToolName:   m.ToolName,
	}
	if m.ToolCalls != nil {
		nm.ToolCalls = m.ToolCalls
	}
	return nm
}

type wlQuery struct {
	Idx  int
	Kind string
	Q    string
}

type wlWorker struct {
	Worker    int
	SessionID string
	Messages  []wlMessage
}

// wlRecord is the union of every record type's fields.
type wlRecord struct {
	Type            string          `json:"type"`
	WorkloadVersion *int            `json:"workload_version"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Model           string          `json:"model"`
	Seq             *int64          `json:"seq"`
	SessionID       string          `json:"session_id"`
	Role            string          `json:"role"`
	Content         *string         `json:"content"`
	ToolCalls       json.RawMessage `json:"tool_calls"`
	ToolCallID      *string         `json:"tool_call_id"`
	ToolName        *string         `json:"tool_name"`
	Idx             *int            `json:"idx"`
	Kind            string          `json:"kind"`
	Q               string          `json:"q"`
	Worker          *int            `json:"worker"`
}

// loadWorkload reads and checks the workload file at path. A missing file is
// not_found; any malformed record is invalid, naming its line.
func loadWorkload(path string) (*workload, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "workload file %s does not exist (generate it with: python3 workload.py --dump %s)", path, path)
		}
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open workload")
	}
	defer f.Close()
	return parseWorkload(f, path)
}

// parseWorkload decodes JSONL workload records from r; name is used in
// error messages.
func parseWorkload(r io.Reader, name string) (*workload, error) {
	wl := &workload{}
	// Lookups needed only while parsing: declared sessions and workers.
	sessionIdx := map[string]int{} // session id -> index in wl.sessions
	byWorker := map[int]*wlWorker{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxWorkloadLine)
	line := 0
	bad := func(format string, args ...any) error {
		return sessiondb.Errorf(sessiondb.EINVALID, "workload %s line %d: "+format, append([]any{name, line}, args...)...)
	}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec wlRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, bad("not a JSON object: %v", err)
		}
		switch rec.Type {
		case "meta":
			if rec.WorkloadVersion != nil && *rec.WorkloadVersion != workloadVersion {
				return nil, bad("workload_version %d, this replay understands %d", *rec.WorkloadVersion, workloadVersion)
			}
		case "session":
			if rec.ID == "" {
				return nil, bad("session has no id")
			}
			if rec.Source == "" {
				return nil, bad("session %q has no source", rec.ID)
			}
			if _, dup := sessionIdx[rec.ID]; dup {
				return nil, bad("session %q declared twice", rec.ID)
			}
			sessionIdx[rec.ID] = len(wl.sessions)
			wl.sessions = append(wl.sessions, wlSession{ID: rec.ID, Source: rec.Source, Model: rec.Model})
		case "message":
			m, err := recordMessage(&rec)
			if err != nil {
				return nil, bad("%v", err)
			}
			if _, ok := sessionIdx[m.SessionID]; !ok {
				return nil, bad("message seq %d names session %q, which no earlier session record declares", m.Seq, m.SessionID)
			}
			// Ids in a fresh store are seq+1 only if seq counts the records.
			if m.Seq != int64(len(wl.messages)) {
				return nil, bad("message seq %d out of order: expected %d", m.Seq, len(wl.messages))
			}
			wl.messages = append(wl.messages, m)
		case "query":
			if rec.Q == "" {
				return nil, bad("query has an empty q")
			}
			idx := len(wl.queries)
			if rec.Idx != nil {
				idx = *rec.Idx
			}
			wl.queries = append(wl.queries, wlQuery{Idx: idx, Kind: rec.Kind, Q: rec.Q})
		case "get_messages":
			if _, ok := sessionIdx[rec.SessionID]; !ok {
				return nil, bad("get_messages names session %q, which no session record declares", rec.SessionID)
			}
			wl.getMessages = rec.SessionID
		case "concurrent_session":
			if rec.Worker == nil || *rec.Worker < 0 {
				return nil, bad("concurrent_session needs a worker number >= 0")
			}
			if rec.SessionID == "" {
				return nil, bad("concurrent_session has no session_id")
			}
			if _, dup := byWorker[*rec.Worker]; dup {
				return nil, bad("worker %d declared twice", *rec.Worker)
			}
			if _, clash := sessionIdx[rec.SessionID]; clash {
				return nil, bad("concurrent session %q is also a main session", rec.SessionID)
			}
			for _, w := range wl.workers {
				if w.SessionID == rec.SessionID {
					return nil, bad("concurrent session %q is used by workers %d and %d", rec.SessionID, w.Worker, *rec.Worker)
				}
			}
			w := &wlWorker{Worker: *rec.Worker, SessionID: rec.SessionID}
			byWorker[w.Worker] = w
			wl.workers = append(wl.workers, w)
		case "concurrent_message":
			if rec.Worker == nil {
				return nil, bad("concurrent_message has no worker")
			}
			w, ok := byWorker[*rec.Worker]
			if !ok {
				return nil, bad("concurrent_message for worker %d, which no earlier concurrent_session declares", *rec.Worker)
			}
			m, err := recordMessage(&rec)
			if err != nil {
				return nil, bad("%v", err)
			}
			if m.SessionID != w.SessionID {
				return nil, bad("concurrent_message of worker %d names session %q, the worker's session is %q", w.Worker, m.SessionID, w.SessionID)
			}
			w.Messages = append(w.Messages, m)
			wl.concRecords++
		case "":
			return nil, bad("record has no type")
		default:
			return nil, bad("unknown record type %q", rec.Type)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			line++
			return nil, bad("record longer than %d bytes", maxWorkloadLine)
		}
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "read workload %s", name)
	}
	if len(wl.messages) == 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "workload %s holds no message records", name)
	}
	sort.Slice(wl.workers, func(i, j int) bool { return wl.workers[i].Worker < wl.workers[j].Worker })
	return wl, nil
}

// recordMessage checks and converts the message fields of rec.
func recordMessage(rec *wlRecord) (wlMessage, error) {
	var m wlMessage
	if rec.Seq == nil || *rec.Seq < 0 {
		return m, sessiondb.Errorf(sessiondb.EINVALID, "%s needs a seq >= 0", rec.Type)
	}
	if rec.SessionID == "" {
		return m, sessiondb.Errorf(sessiondb.EINVALID, "%s seq %d has no session_id", rec.Type, *rec.Seq)
	}
	if rec.Role == "" {
		return m, sessiondb.Errorf(sessiondb.EINVALID, "%s seq %d has no role", rec.Type, *rec.Seq)
	}
	m = wlMessage{
		Seq: *rec.Seq, SessionID: rec.SessionID, Role: rec.Role,
		Content: rec.Content, ToolCallID: rec.ToolCallID, ToolName: rec.ToolName,
	}
	if len(rec.ToolCalls) > 0 && !bytes.Equal(rec.ToolCalls, []byte("null")) {
		var calls []any
		if err := json.Unmarshal(rec.ToolCalls, &calls); err != nil {
			return m, sessiondb.Errorf(sessiondb.EINVALID, "%s seq %d: tool_calls must be a list or null: %v", rec.Type, *rec.Seq, err)
		}
		if calls == nil {
			calls = []any{}
		}
		m.ToolCalls = calls
	}
	return m, nil
}
