package hostd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/safefile"
)

// TokenEnv names the environment variable that gives the token of a
// host's TCP event endpoint to `sessiondb host` and `sessiondb route`.
const TokenEnv = "SESSIONDB_HOST_TOKEN"

// tokenFileName is the file in the data root holding the token of a host's
// TCP event endpoint, for `sessiondb route` and scripts on this machine.
const tokenFileName = sessiondb.HostTokenFile

// maxTokenBytes bounds what ReadTokenFile reads.
const maxTokenBytes = 4096

// TokenFile returns the path of root's token file.
func TokenFile(root string) string { return filepath.Join(root, tokenFileName) }

// WriteTokenFile writes token to root's token file, mode 0600 in the 0700
// root (so only the host's user reads it), replacing one a previous host
// left, never through a link planted at the name.
func WriteTokenFile(root, token string) error {
	return safefile.WriteFile("the token file", TokenFile(root), []byte(token+"\n"), 0o600)
}

// ReadTokenFile reads the token a host wrote in root; found is false when
// there is none.
func ReadTokenFile(root string) (token string, found bool, err error) {
	b, err := safefile.ReadFile("the token file", TokenFile(root), maxTokenBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(b)), true, nil
}

// RemoveTokenFile removes root's token file, when there is one.
func RemoveTokenFile(root string) error {
	if err := os.Remove(TokenFile(root)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "remove %s", TokenFile(root))
	}
	return nil
}
