package httpguard

import (
	"net/http"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:8321": true, "127.9.9.9:1": true, "[::1]:8321": true, "::1": true,
		"localhost": true, "LOCALHOST:80": true, "localhost.:80": true, "app.localhost:1": true,
		"": false, "evil.example": false, "127.0.0.1.evil.example:80": false, "localhost.evil.example": false,
		"0.0.0.0:80": false, "192.168.1.2:80": false, "[::]:80": false, "evil-localhost:80": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestToken(t *testing.T) {
	k := NewToken("abc")
	if !k.Set() || !k.Matches("abc") || k.Matches("abcd") || k.Matches("") || k.Matches("ABC") {
		t.Fatal("a token matches itself alone")
	}
	var none Token
	if none.Set() || none.Matches("") || NewToken("").Matches("") {
		t.Fatal("no token matches nothing, not even the empty string")
	}
	a, err := MakeToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := MakeToken()
	if len(a) != 48 || a == b {
		t.Fatalf("MakeToken: %q, %q; want two different 48-digit tokens", a, b)
	}
}

func TestBearer(t *testing.T) {
	for auth, want := range map[string]string{"Bearer x": "x", "bearer  y ": "y", "Basic x": "", "Bearerx": "", "": ""} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", auth)
		got, ok := Bearer(r)
		if got != want || ok != (want != "") {
			t.Errorf("Bearer(%q) = %q, %v", auth, got, ok)
		}
	}
}
