// Package httpguard holds the checks every sessiondb HTTP listener makes of
// a request before it acts on it, once for `serve` (package http) and the
// host's event endpoint (package hostd): the Host header must name
// loopback (a page of another site that resolved its own name to
// 127.0.0.1, DNS rebinding, sends that name), and a token is compared in
// constant time. Cross-origin writes are refused with net/http's
// CrossOriginProtection by each listener itself.
package httpguard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// LoopbackHost reports whether a Host header names this machine's
// loopback: localhost (or a name under .localhost), or a loopback IP, with
// any port.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Bearer returns the token of an `Authorization: Bearer` header.
func Bearer(r *http.Request) (string, bool) {
	scheme, t, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(t), true
}

// Token is a listener's secret, kept as its SHA-256 so every comparison
// takes one time whatever it is compared with: not even its length leaks.
// The zero Token is none, and matches nothing.
type Token struct {
	set bool
	sum [sha256.Size]byte
}

// NewToken returns the Token of t; "" gives none.
func NewToken(t string) Token {
	if t == "" {
		return Token{}
	}
	return Token{set: true, sum: sha256.Sum256([]byte(t))}
}

// Set reports whether there is a token.
func (k Token) Set() bool { return k.set }

// Matches compares t with the token in constant time; nothing matches no
// token.
func (k Token) Matches(t string) bool {
	if !k.set {
		return false
	}
	a := sha256.Sum256([]byte(t))
	return subtle.ConstantTimeCompare(a[:], k.sum[:]) == 1
}

// MakeToken returns a fresh random token: 24 bytes from crypto/rand, in
// hex.
func MakeToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
