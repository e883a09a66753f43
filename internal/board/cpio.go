package board

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
)

// file is one entry of the initramfs: a directory (none of src, data, link set), a regular
// file copied from src or holding data, or a symlink to link.
type file struct {
	mode uint32
	dir  bool
	src  string
	data []byte
	link string
}

// tree is an initramfs being assembled, guest path (absolute, clean) → entry. The first entry
// added for a path wins.
type tree map[string]file

func (t tree) add(p string, f file) {
	p = path.Clean("/" + p)
	if _, ok := t[p]; !ok {
		t[p] = f
	}
}

func (t tree) dir(p string, mode uint32)            { t.add(p, file{dir: true, mode: mode}) }
func (t tree) data(p string, b []byte, mode uint32) { t.add(p, file{data: b, mode: mode}) }
func (t tree) symlink(p, target string)             { t.add(p, file{link: target, mode: 0o777}) }
func (t tree) copyOf(p, src string, mode os.FileMode) {
	t.add(p, file{src: src, mode: uint32(mode.Perm())})
}

// Mode type bits of the newc format (those of stat(2)).
const (
	cpioDir     = 0o040000
	cpioRegular = 0o100000
	cpioSymlink = 0o120000
)

// writeCpio stores t in the "newc" cpio format the kernel unpacks into its rootfs: parents
// before children (the kernel's unpacker creates no missing parent), timestamps 0, inode
// numbers in order. It is not compressed: under TCG the guest's decompression would cost more
// than reading a bigger archive from the host's page cache.
func writeCpio(w io.Writer, t tree) error {
	for p := range t {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := t[d]; !ok {
				t[d] = file{dir: true, mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(t))
	for p := range t {
		if p != "/" {
			names = append(names, p)
		}
	}
	sort.Strings(names) // a parent is a prefix of its children: it sorts first
	bw := bufio.NewWriterSize(w, 1<<20)
	for i, name := range names {
		if err := writeEntry(bw, name[1:], t[name], uint32(i+1)); err != nil {
			return err
		}
	}
	if err := writeHeader(bw, "TRAILER!!!", 0, 0, 0); err != nil {
		return err
	}
	return bw.Flush()
}

func writeEntry(w *bufio.Writer, name string, f file, ino uint32) error {
	switch {
	case f.dir:
		return writeHeader(w, name, cpioDir|f.mode, ino, 0)
	case f.link != "":
		if err := writeHeader(w, name, cpioSymlink|0o777, ino, uint64(len(f.link))); err != nil {
			return err
		}
		w.WriteString(f.link)
		return pad(w, uint64(len(f.link)))
	case f.src != "":
		in, err := os.Open(f.src)
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		defer in.Close()
		fi, err := in.Stat()
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		size := uint64(fi.Size())
		if err := writeHeader(w, name, cpioRegular|f.mode, ino, size); err != nil {
			return err
		}
		if n, err := io.CopyN(w, in, int64(size)); err != nil {
			return fmt.Errorf("initramfs: copy %s (%d of %d bytes): %w", f.src, n, size, err)
		}
		return pad(w, size)
	default:
		if err := writeHeader(w, name, cpioRegular|f.mode, ino, uint64(len(f.data))); err != nil {
			return err
		}
		w.Write(f.data)
		return pad(w, uint64(len(f.data)))
	}
}

func writeHeader(w *bufio.Writer, name string, mode, ino uint32, size uint64) error {
	if size > 0xffffffff {
		return fmt.Errorf("initramfs: %s is %d bytes, more than newc cpio can hold", name, size)
	}
	nlink := 1
	if mode&cpioDir != 0 {
		nlink = 2
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
	// rdevminor, namesize (with its NUL), check
	fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	w.WriteString(name)
	w.WriteByte(0)
	return pad(w, uint64(110+len(name)+1))
}

// pad aligns to 4 bytes, as newc wants after each header+name and each file body.
func pad(w *bufio.Writer, n uint64) error {
	for ; n%4 != 0; n++ {
		if err := w.WriteByte(0); err != nil {
			return err
		}
	}
	return nil
}
