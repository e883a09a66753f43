package target

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mountinfoPath is where the mount table of this process's mount namespace is read from.
var mountinfoPath = "/proc/self/mountinfo"

// mountEntry is one line of /proc/self/mountinfo (proc(5)).
type mountEntry struct {
	MountPoint string // field 5, unescaped
	FSType     string // first field after the " - " separator
	Source     string // second field after the separator, unescaped
}

// parseMountinfo parses the mountinfo format:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Field 5 is the mount point. The kernel escapes space, tab, newline and backslash in paths
// as \040, \011, \012 and \134, so a path with a space does not split the line; they are
// decoded here. The optional fields (7...) vary in number, hence the " - " separator.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
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
		out = append(out, mountEntry{
			MountPoint: unescapeOctal(fields[4]),
			FSType:     fields[sep+1],
			Source:     unescapeOctal(fields[sep+2]),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeOctal decodes the kernel's \ooo escapes; anything else is kept as it is.
func unescapeOctal(s string) string {
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

func readMounts() ([]mountEntry, error) {
	f, err := os.Open(mountinfoPath)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	return parseMountinfo(f)
}

// canonical returns dir as the kernel writes it in mountinfo: absolute, clean, symlinks
// resolved (when dir exists).
func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// MountedAt reports whether something is mounted on dir itself.
func MountedAt(dir string) (bool, error) {
	d, err := canonical(dir)
	if err != nil {
		return false, fmt.Errorf("mounted at %s: %w", dir, err)
	}
	ms, err := readMounts()
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.MountPoint == d {
			return true, nil
		}
	}
	return false, nil
}

// MountsUnder returns the mount points at dir or below it, deepest first, in the order they
// must be unmounted. A directory with several mounts stacked on it appears once per mount
// (each unmount removes the top one); among equally deep ones the most recent comes first.
func MountsUnder(dir string) ([]string, error) {
	d, err := canonical(dir)
	if err != nil {
		return nil, fmt.Errorf("mounts under %s: %w", dir, err)
	}
	ms, err := readMounts()
	if err != nil {
		return nil, err
	}
	return mountsUnder(ms, d), nil
}

func mountsUnder(ms []mountEntry, d string) []string {
	prefix := strings.TrimSuffix(d, "/") + "/"
	var out []string
	for i := len(ms) - 1; i >= 0; i-- { // most recent first
		mp := ms[i].MountPoint
		if mp == d || strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return depth(b) - depth(a) })
	return out
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
