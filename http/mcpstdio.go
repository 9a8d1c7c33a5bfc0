package http

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMCPLine bounds one line of MCPStdio, as the SDK bounds its own.
const DefaultMCPLine = mcp.DefaultMaxLineLength

// MCPStdio is the transport of `sessiondb mcp`: newline-delimited
// JSON-RPC, a message a line, read from In and written to Out, as the
// SDK's IOTransport does. Unlike it, a line that is not a JSON-RPC
// message (not JSON, not UTF-8, a batch, another version than 2.0, an id
// that is an object, a line longer than MaxLine) is answered with a
// JSON-RPC error and the session goes on: the SDK's transport ended the
// session on the first such line, leaving every request sent before it
// unanswered.
//
// When In ends, the requests read before its end are still answered
// before the session ends (the SDK's transport ended it at once, their
// answers unwritten).
//
// The errors are those of JSON-RPC 2.0: a line that is not JSON (or not
// UTF-8, or too long to read) a parse error (-32700), any other an invalid
// request (-32600); each answers the line's id when it has a readable one
// (a string or a number), else null.
type MCPStdio struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one line in bytes; 0 means DefaultMCPLine.
	MaxLine int
}

// Connect starts reading In. The reading goroutine ends when In does:
// reads of stdin cannot be interrupted, so Close does not wait for it.
func (t *MCPStdio) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.Out, msgs: make(chan lineMsg), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]bool{}, drained: make(chan struct{})}
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMCPLine
	}
	go c.read(bufio.NewReaderSize(t.In, 64<<10), max)
	return c, nil
}

// lineConn is one MCPStdio session (an mcp.Connection).
type lineConn struct {
	out io.Writer
	// mu keeps each message written whole: the SDK writes from several
	// goroutines, and the reader answers bad lines.
	mu        sync.Mutex
	msgs      chan lineMsg
	closed    chan struct{}
	closeOnce sync.Once

	// pending are the ids of the requests read and not yet answered; once
	// In has ended (ended), Read reports its end when drained is closed,
	// as the last of them is answered.
	pmu     sync.Mutex
	pending map[jsonrpc.ID]bool
	ended   bool
	drained chan struct{}
}

// lineMsg is a message read, or the error that ended reading.
type lineMsg struct {
	msg jsonrpc.Message
	err error
}

// read reads In a line at a time until it ends, handing the messages on
// and answering the lines that are not.
func (c *lineConn) read(r *bufio.Reader, max int) {
	for {
		line, tooLong, err := readLine(r, max)
		var m jsonrpc.Message
		switch {
		case tooLong:
			c.answer(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: a line longer than %d bytes was not read", max))
		case len(line) > 0:
			m = c.decode(line)
		}
		if m != nil && !c.send(lineMsg{msg: m}) {
			return
		}
		if err != nil {
			c.send(lineMsg{err: err})
			return
		}
	}
}

// readLine reads the next line without its end (\n or \r\n) and the
// white space around it. A line longer than max is read to its end and
// dropped (tooLong). err is the reader's, io.EOF at the end of In.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		part, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(part) > max+2 { // +2: the line's end is not counted
				tooLong, buf = true, nil
			} else {
				buf = append(buf, part...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(buf), tooLong, err
	}
}

// decode returns the message of line, or answers the line's error and
// returns nil.
func (c *lineConn) decode(line []byte) jsonrpc.Message {
	if !utf8.Valid(line) || !json.Valid(line) {
		c.answer(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON (UTF-8, one message a line)")
		return nil
	}
	switch line[0] {
	case '{':
	case '[':
		c.answer(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not taken, send one message a line")
		return nil
	default:
		c.answer(nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is an object")
		return nil
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.answer(lineID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	return m
}

// lineID is the id of a message that is a JSON object when it is one a
// response can carry (a string or a number), else nil.
func lineID(line []byte) json.RawMessage {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil || len(v.ID) == 0 {
		return nil
	}
	var id any
	if json.Unmarshal(v.ID, &id) != nil {
		return nil
	}
	switch id.(type) {
	case string, float64:
		return v.ID
	}
	return nil
}

// answer writes a JSON-RPC error response to Out.
func (c *lineConn) answer(id json.RawMessage, code int64, message string) {
	c.writeLine(rpcError(id, code, message))
}

func (c *lineConn) writeLine(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// send hands m to Read; false once the connection is closed.
func (c *lineConn) send(m lineMsg) bool {
	select {
	case c.msgs <- m:
		return true
	case <-c.closed:
		return false
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	var m lineMsg
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case m = <-c.msgs:
	}
	if m.err != nil {
		// The end of In: the requests read before it are answered first.
		if c.end() {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.closed:
			case <-c.drained:
			}
		}
		return nil, m.err
	}
	if r, ok := m.msg.(*jsonrpc.Request); ok {
		c.track(r)
	}
	return m.msg, nil
}

// track notes a request read: a call waits for its answer. (The SDK
// answers a call the client cancelled too, with an error.)
func (c *lineConn) track(r *jsonrpc.Request) {
	if !r.IsCall() {
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.pending[r.ID] = true
}

// end notes that In has ended, and reports whether requests are still
// waiting for their answers.
func (c *lineConn) end() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.ended = true
	return len(c.pending) > 0
}

// answered drops id from the requests waiting (c.pmu held), and tells a
// Read waiting at the end of In when it was the last.
func (c *lineConn) answered(id jsonrpc.ID) {
	if !c.pending[id] {
		return
	}
	delete(c.pending, id)
	if c.ended && len(c.pending) == 0 {
		close(c.drained)
	}
}

func (c *lineConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	err = c.writeLine(b)
	if r, ok := m.(*jsonrpc.Response); ok {
		c.pmu.Lock()
		c.answered(r.ID)
		c.pmu.Unlock()
	}
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }
