package dataset

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// dirent is one directory entry as getdents64 returns it.
type dirent struct {
	name string
	typ  uint8 // unix.DT_*
}

// dirReader lists directories with getdents64 into a reused buffer. It is used instead of
// os.ReadDir because the walks are part of timed operations: os.File registers every
// descriptor with the runtime poller (an extra failing epoll_ctl per open) and os.ReadDir
// allocates a DirEntry per name. Opening children relative to the parent's descriptor
// (openat) also spares the kernel a full path lookup per file, like GNU tar and cp's fts do.
type dirReader struct {
	buf []byte
}

func newDirReader() *dirReader { return &dirReader{buf: make([]byte, 32<<10)} }

// read returns the entries of the open directory fd, without "." and "..", sorted by name
// so that every walk (and so every copy, read and sample) visits a tree in the same order.
// Entries whose type the filesystem does not report (DT_UNKNOWN) are resolved with fstatat.
func (d *dirReader) read(fd int) ([]dirent, error) {
	var ents []dirent
	for {
		n, err := unix.Getdents(fd, d.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("getdents: %w", err)
		}
		if n <= 0 {
			break
		}
		b := d.buf[:n]
		for len(b) >= 19 {
			// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, fmt.Errorf("getdents: malformed record (reclen %d)", reclen)
			}
			typ := b[18]
			nameb := b[19:reclen]
			if i := bytes.IndexByte(nameb, 0); i >= 0 {
				nameb = nameb[:i]
			}
			b = b[reclen:]
			if len(nameb) == 1 && nameb[0] == '.' || len(nameb) == 2 && nameb[0] == '.' && nameb[1] == '.' {
				continue
			}
			name := string(nameb)
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					return nil, fmt.Errorf("stat %s: %w", name, err)
				}
				typ = modeToDT(st.Mode)
			}
			ents = append(ents, dirent{name: name, typ: typ})
		}
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return ents, nil
}

// modeToDT is the directory-entry type of a file of mode: the kernel's IFTODT, the file
// type bits shifted down (DT_REG is S_IFREG>>12, and so on for every type).
func modeToDT(mode uint32) uint8 { return uint8((mode & unix.S_IFMT) >> 12) }

// openDir opens a directory below dirfd without following a symlink in its place.
func openDir(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// joinPath builds a path for error messages only (the walks themselves use descriptors).
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
