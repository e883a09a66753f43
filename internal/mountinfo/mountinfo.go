// Package mountinfo reads the kernel's mount table, /proc/self/mountinfo, and unmounts what is
// in it: every package that must know what is mounted where (the cleanup of a killed run,
// unmounting, finding tracefs, the device safety checks) reads it through here, escapes and
// all, and every umount(2) of fsbench goes through Unmount, with its retries.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Entry is one line of /proc/self/mountinfo (proc(5)).
type Entry struct {
	MajorMinor string // field 3, the device of the filesystem, e.g. "7:3"
	Root       string // field 4, the directory of the filesystem mounted here ("/" for all of it), unescaped
	MountPoint string // field 5, unescaped
	FSType     string // first field after the " - " separator
	Source     string // second field after the separator, unescaped
}

// Parse parses the mountinfo format:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Field 5 is the mount point. The kernel escapes space, tab, newline and backslash in paths
// as \040, \011, \012 and \134, so a path with a space does not split the line; they are
// decoded here. The optional fields (7...) vary in number, hence the " - " separator.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		fields := strings.Split(text, " ")
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 6 || len(fields) < sep+3 {
			return nil, fmt.Errorf("mountinfo line %d: malformed: %q", line, text)
		}
		out = append(out, Entry{
			MajorMinor: fields[2],
			Root:       Unescape(fields[3]),
			MountPoint: Unescape(fields[4]),
			FSType:     fields[sep+1],
			Source:     Unescape(fields[sep+2]),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// Unescape decodes the kernel's \ooo escapes; anything else is kept as it is.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			if s[i+1] <= '3' { // \400 and above do not fit a byte: not an escape
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// Read parses the mountinfo file at path; "" reads this process's mount namespace
// (/proc/self/mountinfo).
func Read(path string) ([]Entry, error) {
	if path == "" {
		path = TablePath
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	return Parse(f)
}
