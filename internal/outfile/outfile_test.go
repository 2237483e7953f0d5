package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// leftovers lists the files in dir other than names: temporary files left behind.
func leftovers(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		keep := false
		for _, n := range names {
			keep = keep || e.Name() == n
		}
		if !keep {
			out = append(out, e.Name())
		}
	}
	return out
}

// A new path and a regular file are written, with the permissions asked for; nothing
// else stays in the directory.
func TestWriteRegularAndNew(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	os.WriteFile(old, []byte("previous"), 0o600)
	fresh := filepath.Join(dir, "new.csv")
	if err := Write([]string{old, fresh}, 0o644, writeString("trace"), writeString("table")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{old: "trace", fresh: "table"} {
		b, _ := os.ReadFile(p)
		st, _ := os.Stat(p)
		if string(b) != want || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: %q mode %v, want %q 0644", p, b, st.Mode().Perm(), want)
		}
	}
	if l := leftovers(t, dir, "old.json", "new.csv"); len(l) > 0 {
		t.Errorf("left behind %v", l)
	}
}

// A symbolic link, a FIFO, a device and a directory are refused with a message that says
// what the path is, and are left as they were: the link and its target, the FIFO (no
// write blocks on it), the directory's contents.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	cases := []struct{ path, want string }{
		{link, link + " is a symbolic link; pimtui writes only to a regular file or a new path"},
		{fifo, fifo + " is a FIFO; pimtui writes only to a regular file or a new path"},
		{"/dev/null", "/dev/null is a device; pimtui writes only to a regular file or a new path"},
		{sub, sub + " is a directory; give a file name inside it or elsewhere"},
	}
	for _, c := range cases {
		err := Write([]string{c.path}, 0o644, writeString("x"))
		var oe *Error
		if !errors.As(err, &oe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.path, err, c.want)
		}
		if _, err := Create(c.path, 0o644); err == nil {
			t.Errorf("%s: Create accepted it", c.path)
		}
		if err := WriteNew(c.path, 0o600, []byte("x")); err == nil {
			t.Errorf("%s: WriteNew accepted it", c.path)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target now holds %q", b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeDevice == 0 {
		t.Error("/dev/null is no longer a device")
	}
	if l := leftovers(t, dir, "target", "link", "fifo", "sub"); len(l) > 0 {
		t.Errorf("left behind %v", l)
	}
	if l := leftovers(t, sub); len(l) > 0 {
		t.Errorf("left in the directory: %v", l)
	}
}

// A writer that fails leaves every path as it was, and no temporary file behind.
func TestFailedWriteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("A"), 0o644)
	boom := errors.New("disk full")
	err := Write([]string{a, b}, 0o644, writeString("new A"), func(io.Writer) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if got, _ := os.ReadFile(a); string(got) != "A" {
		t.Errorf("a holds %q after a failed export", got)
	}
	if _, err := os.Stat(b); err == nil {
		t.Error("b was created by a failed export")
	}
	if l := leftovers(t, dir, "a"); len(l) > 0 {
		t.Errorf("left behind %v", l)
	}
}

// Create's file reaches its path only on Commit; Discard leaves the path as it was.
func TestCreateCommitDiscard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "trace.json")
	os.WriteFile(p, []byte("old"), 0o644)
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "half")
	f.Discard()
	f.Discard()
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("after Discard the path holds %q", b)
	}
	f, _ = Create(p, 0o644)
	io.WriteString(f, "new")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Discard()
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("after Commit the path holds %q", b)
	}
	if l := leftovers(t, dir, "trace.json"); len(l) > 0 {
		t.Errorf("left behind %v", l)
	}
}

// A path whose directory does not exist says so; WriteNew never replaces a file.
func TestMissingDirectoryAndExistingKey(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "no", "such", "file")
	if err := Write([]string{p}, 0o644, writeString("x")); err == nil || err.Error() != "cannot write "+p+": no such file or directory" {
		t.Errorf("got %v", err)
	}
	key := filepath.Join(dir, "key")
	if err := WriteNew(key, 0o600, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", st.Mode().Perm())
	}
	if err := WriteNew(key, 0o600, []byte("other")); err == nil {
		t.Error("WriteNew replaced an existing file")
	}
	if b, _ := os.ReadFile(key); string(b) != "secret" {
		t.Errorf("key holds %q", b)
	}
}
