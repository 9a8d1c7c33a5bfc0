package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/sessiondb/sessiondb"
)

// Codes of refusals the server makes itself, beside the domain's codes.
const (
	codeUnauthorized = "unauthorized" // no token, or a wrong one
	codeForbidden    = "forbidden"    // a write from another origin, or with writes off
)

// errorBody is every error's JSON: {"error":{"code","message"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StatusOf maps an error code to its HTTP status: invalid 400,
// unauthorized 401, forbidden 403, not_found 404, conflict 409, busy 503,
// anything else 500.
func StatusOf(code string) int {
	switch code {
	case sessiondb.EINVALID:
		return http.StatusBadRequest
	case codeUnauthorized:
		return http.StatusUnauthorized
	case codeForbidden:
		return http.StatusForbidden
	case sessiondb.ENOTFOUND:
		return http.StatusNotFound
	case sessiondb.ECONFLICT:
		return http.StatusConflict
	case sessiondb.EBUSY:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError answers err as JSON with the status of its code. A request
// whose client went away gets nothing (nobody reads it).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	code := sessiondb.ErrorCode(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code = sessiondb.EBUSY
	}
	status := StatusOf(code)
	if status >= 500 {
		s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	if code == sessiondb.EBUSY {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: err.Error()}})
}

// refuse answers a refusal the server makes itself.
func (s *Server) refuse(w http.ResponseWriter, code, message string) {
	writeJSON(w, StatusOf(code), errorBody{errorDetail{Code: code, Message: message}})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorBody{errorDetail{Code: sessiondb.EINTERNAL, Message: "encode response: " + err.Error()}})
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// answer writes v as a handler's 200 answer, or, when the read that made v
// failed, returns err for the route to answer instead.
func answer(w http.ResponseWriter, v any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// maxBodyBytes bounds a request body: every write takes a few fields.
const maxBodyBytes = 1 << 20

// readJSON decodes the request body into v, refusing unknown fields, more
// than one value and bodies past maxBodyBytes (invalid, saying which).
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return sessiondb.Errorf(sessiondb.EINVALID, "request body is larger than %d bytes", maxBodyBytes)
		}
		return sessiondb.Errorf(sessiondb.EINVALID, "request body is not the expected JSON: %v", err)
	}
	if dec.More() {
		return sessiondb.Errorf(sessiondb.EINVALID, "request body holds more than one JSON value")
	}
	return nil
}
