package hostd

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/sessiondb/sessiondb/internal/httpguard"
)

// The endpoint on loopback TCP can be reached by every web page the
// user's browser opens: a page can post to 127.0.0.1 (a form, a no-cors
// fetch, a beacon), and one that rebinds its own name to 127.0.0.1 can
// also read the answers. So on TCP every request must name loopback in
// its Host, and a POST must come from no other origin
// (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host),
// carry a JSON content type (a form or a beacon cannot send one, and a
// page's fetch that sets one is stopped by the browser's CORS preflight,
// which the endpoint does not answer) and carry the host's token. A Unix
// socket needs none of it: a browser cannot reach one, and its mode
// (0600 in the 0700 data root) admits only the host's user.

// tcpGuard wraps the endpoint's handler on a TCP listener with the checks
// above; token is the host's (none: every POST is refused).
func tcpGuard(next http.Handler, token httpguard.Token) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, http.StatusForbidden, "forbidden", "the event endpoint takes no request from a web page of another origin")
	}))
	post := cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !jsonType(r.Header.Get("Content-Type")):
			refuse(w, http.StatusUnsupportedMediaType, "invalid", "the event endpoint takes JSON lines: send Content-Type: application/x-ndjson (or application/json)")
		case !token.Set():
			refuse(w, http.StatusForbidden, "forbidden", "the event endpoint on TCP was started without a token: it takes no event")
		default:
			if t, ok := httpguard.Bearer(r); ok && token.Matches(t) {
				next.ServeHTTP(w, r)
				return
			}
			refuse(w, http.StatusUnauthorized, "unauthorized", "the event endpoint on TCP needs the host's token: send Authorization: Bearer TOKEN (the host writes it to "+tokenFileHint+"; sessiondb route reads it there)")
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !httpguard.LoopbackHost(r.Host) {
			// A page that rebound its own name to 127.0.0.1 sends that
			// name: it may neither write nor read.
			refuse(w, http.StatusForbidden, "forbidden", "the event endpoint answers only to a loopback host name (127.0.0.1, [::1], localhost)")
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		post.ServeHTTP(w, r)
	})
}

// tokenFileHint names the token file for a refusal, which does not know
// the data root.
const tokenFileHint = "<data>/" + tokenFileName

// jsonType reports whether a Content-Type is JSON or JSON lines:
// application/json, application/x-ndjson, application/ndjson,
// application/jsonl, or any application/*+json.
func jsonType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/json", "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines":
		return true
	}
	return strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// refuse answers a refused request with status and the error shape of
// `serve` ({"error":{"code","message"}}).
func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
