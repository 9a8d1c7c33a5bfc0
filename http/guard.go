package http

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/sessiondb/sessiondb/internal/httpguard"
)

// TokenCookie starts the name of the cookie a browser keeps after opening
// the URL the server printed (/?token=...): TokenCookie_PORT, the port the
// server listens on (tokenCookieName). It is HttpOnly (no script reads it)
// and SameSite=Strict (no other site's request carries it).
//
// A browser keeps cookies by host, not by port: a cookie of 127.0.0.1 goes
// to every server on 127.0.0.1. Under one name, the second server's login
// replaced the first's cookie (whose writes then failed 401); the port in
// the name keeps each server's own. And the cookie holds a digest of the
// token, not the token (cookieValue): the other servers on the host are
// sent it too, and must not learn a token that may open more than this
// server.
const TokenCookie = "sessiondb_token"

// tokenCookieName is the name of the token's cookie on the server r came
// to: TokenCookie_PORT after the port of the address the connection was
// accepted on; TokenCookie alone where there is none (a Unix socket, a
// handler called without a server).
func tokenCookieName(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(a.String()); err == nil && port != "" {
			return TokenCookie + "_" + port
		}
	}
	return TokenCookie
}

// cookieValue is what the token's cookie holds: HMAC-SHA256 of a fixed
// label keyed with the token, hex. It opens this server as the token does,
// but does not give the token away.
func cookieValue(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("sessiondb serve: token cookie"))
	return hex.EncodeToString(m.Sum(nil))
}

// ContentSecurityPolicy is sent with every response: scripts, styles,
// fetches and frames only from this origin, no inline script or style, no
// plugins, and no other site may frame a page.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// guard is the outermost middleware: security headers on every response,
// the Host check that keeps DNS-rebinding sites off a loopback server, the
// token for reads where they need it, the token-in-URL login, and a panic
// turned into a 500 instead of a dropped connection.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				s.refuse(w, "internal", "internal error")
			}
		}()
		needToken := s.readsNeedToken()
		var login string
		if r.Method == http.MethodGet {
			login = r.URL.Query().Get("token")
		}
		if !needToken && !httpguard.LoopbackHost(r.Host) && !s.authorized(r) && !s.tokenMatches(login) {
			// A page of another site that resolved its own name to
			// 127.0.0.1 (DNS rebinding) sends its own name as Host, and
			// has no token. A name of the operator's own for this machine
			// (serve --listen NAME:PORT) is served to the token.
			s.refuse(w, codeForbidden, "this server answers to a name other than a loopback one (localhost, 127.0.0.1, [::1]) only with its token")
			return
		}
		if login != "" {
			s.login(w, r, login)
			return
		}
		if needToken && r.URL.Path != "/healthz" && !s.authorized(r) {
			s.refuse(w, codeUnauthorized, "this server needs its token: send `Authorization: Bearer TOKEN`, or open the URL the server printed")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// login takes the token from a URL the server printed: a right one is
// moved into the cookie and the browser sent back to the same URL without
// it (so it stays out of history and Referer); a wrong one is refused.
func (s *Server) login(w http.ResponseWriter, r *http.Request, token string) {
	if !s.tokenMatches(token) {
		s.refuse(w, codeUnauthorized, "wrong token")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookieName(r), Value: cookieValue(token), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	q := r.URL.Query()
	q.Del("token")
	target := localPath(r.URL.EscapedPath())
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// localPath returns p as a path on this server: one slash, then p without
// its leading slashes and backslashes. A request for //evil.com/?token=T
// must not send the browser to //evil.com/ (a browser reads a leading //
// or /\ as another host), whatever the request line said.
func localPath(p string) string {
	return "/" + strings.TrimLeft(p, `/\`)
}

// authorized reports whether r carries the server's token, as a bearer
// token or in the cookie.
func (s *Server) authorized(r *http.Request) bool {
	if t, ok := httpguard.Bearer(r); ok {
		return s.tokenMatches(t)
	}
	if c, err := r.Cookie(tokenCookieName(r)); err == nil && s.cfg.Token != "" {
		return hmac.Equal([]byte(c.Value), []byte(s.cookie))
	}
	return false
}

// tokenMatches compares t with the server's token in constant time; no
// token matches a server without one.
func (s *Server) tokenMatches(t string) bool { return s.token.Matches(t) }

// writeGuard wraps a write route: the server must have a token and r must
// carry it, and a browser's request must come from this server's own
// origin (Sec-Fetch-Site, else Origin against Host), so another site's
// page cannot make the user's browser write with the user's cookie.
func (s *Server) writeGuard(next http.Handler) http.Handler {
	return s.writeGuardWith(next, func(w http.ResponseWriter, _ *http.Request, code, message string) {
		s.refuse(w, code, message)
	})
}

// writeGuardWith is writeGuard answering a refusal with refuse: the API
// answers JSON, the web UI's forms its error page (uiWrite). One set of
// checks guards both.
func (s *Server) writeGuardWith(next http.Handler, refuse func(w http.ResponseWriter, r *http.Request, code, message string)) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, codeForbidden, "writes are accepted only from this server's own pages (the request came from another origin)")
	}))
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.cfg.Token == "":
			refuse(w, r, codeForbidden, "writes are off: the server was started without a token")
		case !s.authorized(r):
			refuse(w, r, codeUnauthorized, "writes need the server's token")
		default:
			next.ServeHTTP(w, r)
		}
	})
	return cop.Handler(inner)
}
