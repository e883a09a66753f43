package aging

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Entry is one line of a tree's listing.
type Entry struct {
	Path   string // relative to the tree's root, with forward slashes
	Dir    bool
	Size   int64
	SHA256 string // of a regular file's content
}

// List walks the tree under dir in lexical order: every directory and regular file, with each
// file's size and hash. Two agings with the same seed give the same listing.
func List(dir string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "." {
			return nil
		}
		e := Entry{Path: filepath.ToSlash(rel), Dir: d.IsDir()}
		if d.Type().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			h := sha256.New()
			n, err := io.Copy(h, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("hashing %s: %w", path, err)
			}
			e.Size, e.SHA256 = n, hex.EncodeToString(h.Sum(nil))
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return out, nil
}

// WriteListing writes one line per entry: "d PATH/" for a directory, "f SIZE SHA256 PATH" for a
// file.
func WriteListing(w io.Writer, l []Entry) error {
	for _, e := range l {
		var err error
		if e.Dir {
			_, err = fmt.Fprintf(w, "d %s/\n", e.Path)
		} else {
			_, err = fmt.Fprintf(w, "f %d %s %s\n", e.Size, e.SHA256, e.Path)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Digest is the SHA-256 of a listing as WriteListing writes it: one figure that says whether two
// aged trees are the same.
func Digest(l []Entry) string {
	h := sha256.New()
	WriteListing(h, l)
	return hex.EncodeToString(h.Sum(nil))
}
