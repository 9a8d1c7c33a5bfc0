package testkit

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", c.Now(), want)
	}
	c.Set(start.Add(-time.Hour))
	if want := start.Add(-time.Hour); !c.Now().Equal(want) {
		t.Fatalf("after Set: %v, want %v", c.Now(), want)
	}
}

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Fatalf("%d bytes, want 800", n)
	}
}

func TestEnvInt(t *testing.T) {
	const name = "TESTKIT_ENVINT"
	for _, tc := range []struct {
		val  string
		want int
	}{{"", 7}, {"12", 12}, {"0", 7}, {"-3", 7}, {"x", 7}} {
		t.Setenv(name, tc.val)
		if got := EnvInt(name, 7); got != tc.want {
			t.Errorf("%s=%q: got %d, want %d", name, tc.val, got, tc.want)
		}
	}
}

func TestServeChild(t *testing.T) {
	var got []string
	roles := map[string]func([]string) error{
		"echo": func(args []string) error { got = args; return nil },
		"fail": func([]string) error { return errors.New("disk on fire") },
	}
	var stderr bytes.Buffer
	if code := serveChild(roles, "echo", "a b\x1f/c", &stderr); code != 0 || !reflect.DeepEqual(got, []string{"a b", "/c"}) || stderr.Len() != 0 {
		t.Fatalf("echo: exit %d, args %q, stderr %q; want 0 and [a b, /c]", code, got, stderr.String())
	}
	if code := serveChild(roles, "fail", "", &stderr); code != 3 || !strings.Contains(stderr.String(), "disk on fire") {
		t.Fatalf("fail: exit %d, stderr %q; want 3 with the error", code, stderr.String())
	}
	stderr.Reset()
	if code := serveChild(roles, "nope", "", &stderr); code != 3 || !strings.Contains(stderr.String(), `unknown helper role "nope"`) {
		t.Fatalf("unknown role: exit %d, stderr %q", code, stderr.String())
	}
}

// TestChildCommandRunsTheRole runs this test binary as a child in a role
// that writes its arguments back.
func TestChildCommandRunsTheRole(t *testing.T) {
	out, err := ChildCommand("TestServeChildFromThisBinary", "echo", "x y", "z").Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if string(out) != "x y|z" {
		t.Fatalf("child wrote %q, want %q", out, "x y|z")
	}
	out, err = ChildCommand("TestServeChildFromThisBinary", "nope").Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("unknown role: %v (output %q), want exit status 3", err, out)
	}
}

// TestServeChildFromThisBinary is not a test: it serves
// TestChildCommandRunsTheRole's children.
func TestServeChildFromThisBinary(t *testing.T) {
	ServeChild(map[string]func([]string) error{"echo": func(args []string) error {
		_, err := os.Stdout.WriteString(strings.Join(args, "|"))
		return err
	}})
}
