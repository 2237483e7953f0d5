package serve

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/charmbracelet/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/pimtui/pimtui/internal/outfile"
)

// authorizer lets in the keys listed in path. The file is read again at each login,
// so keys added during a class count at once.
func (s *Server) authorizer(path string) ssh.PublicKeyHandler {
	return func(ctx ssh.Context, key ssh.PublicKey) bool {
		keys, err := readAuthorizedKeys(path)
		if err != nil {
			s.log.Warn("authorized keys unreadable", "path", path, "reason", err.Error())
			return false
		}
		for _, k := range keys {
			if ssh.KeysEqual(k, key) {
				return true
			}
		}
		s.log.Info("key rejected", "remote", ctx.RemoteAddr().String(), "user", ctx.User(), "key", gossh.FingerprintSHA256(key))
		return false
	}
}

// readAuthorizedKeys parses an authorized_keys file; blank lines and # comments are
// skipped, and a line that is not a key is an error naming it.
func readAuthorizedKeys(path string) ([]ssh.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--authorized-keys: %w", err)
	}
	var keys []ssh.PublicKey
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, _, _, _, err := gossh.ParseAuthorizedKey(line)
		if err != nil {
			return nil, fmt.Errorf("--authorized-keys %s:%d: %v", path, n, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--authorized-keys %s: no keys in the file", path)
	}
	return keys, sc.Err()
}

// loadHostKey reads the host key at path, or creates an ed25519 one there (in a
// directory private to the user, mode 0600) when there is none. The path must be a
// regular file or new, as for every file pimtui writes.
func loadHostKey(path string) (signer gossh.Signer, created bool, err error) {
	if err := outfile.Check(path); err != nil {
		return nil, false, InputError{fmt.Errorf("--host-key: %v", err)}
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if data, err = newHostKey(path); err != nil {
			return nil, false, fmt.Errorf("create host key: %w", err)
		}
		created = true
	} else if err != nil {
		return nil, false, InputError{fmt.Errorf("--host-key: %v", err)}
	} else if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, false, InputError{fmt.Errorf("host key %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())}
	}
	signer, err = gossh.ParsePrivateKey(data)
	if err != nil {
		return nil, false, InputError{fmt.Errorf("host key %s: %v", path, err)}
	}
	return signer, created, nil
}

func newHostKey(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := gossh.MarshalPrivateKey(priv, "pimtui host key")
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(block)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return data, outfile.WriteNew(path, 0o600, data)
}
