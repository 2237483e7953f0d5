package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A terminal of any size is drawn within MaxWidth×MaxHeight, and a negative size as none.
func TestServedSize(t *testing.T) {
	for _, c := range []struct{ w, h, ww, wh int }{
		{80, 24, 80, 24},
		{10000, 10000, MaxWidth, MaxHeight},
		{-1, -5, 0, 0},
		{MaxWidth + 1, 10, MaxWidth, 10},
	} {
		if w, h := servedSize(c.w, c.h); w != c.ww || h != c.wh {
			t.Errorf("servedSize(%d, %d) = %d×%d, want %d×%d", c.w, c.h, w, h, c.ww, c.wh)
		}
	}
}

// An authorised-keys file names the line that is not a key, and a file without keys is
// refused rather than letting nobody in silently.
func TestReadAuthorizedKeysErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad", "# class keys\n\nnot-a-key\n")
	if _, err := readAuthorizedKeys(bad); err == nil || !strings.Contains(err.Error(), bad+":3:") {
		t.Errorf("a bad line: %v, want the file and line 3", err)
	}
	empty := write("empty", "# nobody yet\n")
	if _, err := readAuthorizedKeys(empty); err == nil || !strings.Contains(err.Error(), "no keys in the file") {
		t.Errorf("no keys: %v", err)
	}
	if _, err := readAuthorizedKeys(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--authorized-keys") {
		t.Errorf("a missing file: %v", err)
	}
}
