package http

// TokenCookieValue is what the token's cookie holds for a token, for the
// package's external tests.
var TokenCookieValue = cookieValue
