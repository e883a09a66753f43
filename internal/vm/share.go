package vm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The guest writes its results into a directory of the host, shared with -virtfs (9p). Root in
// the guest must not be root over that directory: with QEMU's security_model=none a guest's
// mknod makes a device node on the host, and its chmod 4755 a set-uid file, both owned by the
// host's root. A mapping security model keeps what the guest asks for in metadata and gives the
// host plain files: mapped-xattr stores the guest's owner, mode and device number in user.virtfs.*
// extended attributes of a regular file (a device node, a symbolic link the guest makes are
// regular files on the host, created with mode 0600, directories 0700); mapped-file keeps them
// in .virtfs_metadata directories beside, for a filesystem without user extended attributes.
// After the guest, normalizeShare gives the files the guest made ordinary modes (0644, 0755) and
// drops the mapping's metadata, so that the results read as any others.

// shareModel is the security model for sharing dir: mapped-xattr where its filesystem keeps user
// extended attributes, else mapped-file.
func shareModel(dir string) string {
	probe := filepath.Join(dir, ".fsbench-xattr-probe")
	f, err := os.OpenFile(probe, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "mapped-file"
	}
	f.Close()
	defer os.Remove(probe)
	if err := unix.Setxattr(probe, "user.fsbench.probe", []byte("1"), 0); err != nil {
		return "mapped-file"
	}
	return "mapped-xattr"
}

// mappedMetadata is the directory mapped-file keeps its metadata in, in every shared directory.
const mappedMetadata = ".virtfs_metadata"

// normalizeShare makes what the guest wrote into dir plain files and directories of the host's:
// each file or directory the mapping marked as the guest's (a user.virtfs.* attribute, or an entry
// in its directory's .virtfs_metadata) gets mode 0644 (0755 for a directory) and loses the marks;
// the .virtfs_metadata directories go. Only regular files and directories can be there: the
// mapping made nothing else.
func normalizeShare(dir string) error {
	var errs []error
	var metaDirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if d.Name() == mappedMetadata && d.IsDir() {
			metaDirs = append(metaDirs, p)
			return fs.SkipDir
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil // a link or node the host made itself; the guest cannot make one
		}
		guests := mappedMarks(p)
		if _, err := os.Lstat(filepath.Join(filepath.Dir(p), mappedMetadata, d.Name())); err == nil {
			guests = append(guests, "")
		}
		if len(guests) == 0 || p == dir {
			return nil
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			errs = append(errs, err)
		}
		for _, a := range guests {
			if a != "" {
				if err := unix.Lremovexattr(p, a); err != nil && !errors.Is(err, unix.ENODATA) {
					errs = append(errs, err)
				}
			}
		}
		return nil
	})
	for _, m := range metaDirs {
		errs = append(errs, os.RemoveAll(m))
	}
	return errors.Join(append(errs, err)...)
}

// mappedMarks are the user.virtfs.* attributes mapped-xattr put on p.
func mappedMarks(p string) []string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n <= 0 {
		return nil
	}
	var out []string
	for _, a := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(a, "user.virtfs.") {
			out = append(out, a)
		}
	}
	return out
}
