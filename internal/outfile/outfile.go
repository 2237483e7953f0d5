// Package outfile writes the files pimtui makes (traces, exports, saved screens, the SSH
// host key) without ever clobbering anything: a file goes only to a path that is a
// regular file or does not exist yet, never through a symbolic link, onto a directory, a
// FIFO or a device, and it is written in full beside its path before it takes the path's
// place, so a failure leaves what was there untouched.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Error is a path pimtui will not write to, and why.
type Error struct {
	Path string
	What string // "a symbolic link", "a directory", …
	Err  error  // set when the path could not be examined or its directory written
}

func (e *Error) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("cannot write %s: %v", e.Path, e.Err)
	case e.What == "a directory":
		return fmt.Sprintf("%s is a directory; give a file name inside it or elsewhere", e.Path)
	}
	return fmt.Sprintf("%s is %s; pimtui writes only to a regular file or a new path, so remove it or give another path", e.Path, e.What)
}

func (e *Error) Unwrap() error { return e.Err }

// Check reports why path cannot be written, or nil when it does not exist or is a
// regular file. A symbolic link is refused even when it leads to a regular file:
// replacing the file would replace the link.
func Check(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &Error{Path: path, Err: err}
	case st.Mode().IsRegular():
		return nil
	}
	return &Error{Path: path, What: Kind(st.Mode())}
}

// Kind names what a file that is not a regular one is.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// File is a file being written: a temporary file beside its path until Commit renames it
// into place.
type File struct {
	*os.File
	path string
	done bool
}

// Create checks path and starts writing it, with permissions perm once committed.
func Create(path string, perm fs.FileMode) (*File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pimtui-*")
	if err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	return &File{File: tmp, path: path}, nil
}

// unwrapPath drops the temporary file's name from an error about it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Commit closes the file and renames it into place, checking the path again first.
func (f *File) Commit() error {
	if f.done {
		return errors.New("outfile: committed twice")
	}
	f.done = true
	err := f.File.Close()
	if err == nil {
		err = Check(f.path)
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Discard closes and removes the temporary file unless it has been committed; it may be
// deferred.
func (f *File) Discard() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.Name())
}

// Write writes each of paths with the writer at the same place, in full, before
// renaming any into place: on a failure none of the paths changes.
func Write(paths []string, perm fs.FileMode, writers ...func(io.Writer) error) error {
	files := make([]*File, 0, len(paths))
	defer func() {
		for _, f := range files {
			f.Discard()
		}
	}()
	for i, p := range paths {
		f, err := Create(p, perm)
		if err != nil {
			return err
		}
		files = append(files, f)
		if err := writers[i](f); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := Check(f.path); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// WriteNew writes data to path, which must not exist: a file that must never replace
// another (a key). A failed write leaves nothing behind.
func WriteNew(path string, perm fs.FileMode, data []byte) error {
	if err := Check(path); err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return &Error{Path: path, Err: unwrapPath(err)}
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		os.Remove(path)
		return err
	}
	return fh.Close()
}
