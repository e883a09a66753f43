package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Spec describes a generated tree.
type Spec struct {
	Seed        uint64 // same Seed and TargetBytes => byte-identical tree
	TargetBytes uint64 // total size of regular files; the result is within ±5 % of it
}

const (
	// genChunk is the write size of Generate and WriteVideo: large enough that syscall
	// overhead vanishes, small enough to stay in L2 cache; a multiple of 16 (see binGen.fill).
	genChunk = 256 << 10
	// maxFileCap bounds the largest generated file (a big shared library or locale archive);
	// TargetBytes/8 bounds it further for small trees.
	maxFileCap = 8 << 20
	// baseTime is the newest mtime in a generated tree (Debian 12's release date). Fixed times
	// make squashfs/erofs images of the tree reproducible.
	baseTime = 1686355200
	// mtimeSpread: file mtimes lie up to two years before baseTime, like package builds.
	mtimeSpread = 2 * 365 * 86400
	arch        = "aarch64-linux-gnu"
)

// pentry is one planned entry of a generated tree.
type pentry struct {
	path    string // relative to the tree root
	typ     uint8  // unix.DT_DIR, DT_REG or DT_LNK
	mode    uint32 // permission bits
	content uint8  // contentText, ...
	size    uint64
	target  string // symlink target
	mtime   int64
}

// planner lays out the tree before any byte is written. It holds metadata only (about
// 100 bytes per entry, ~4 MB for a 1 GiB tree), never contents.
type planner struct {
	r       *rand.Rand
	target  uint64
	total   uint64
	maxFile uint64
	ents    []pentry
	used    map[string]uint8 // path -> type, to keep paths unique and parents directories
	done    bool
}

func (p *planner) mtime() int64 { return baseTime - p.r.Int64N(mtimeSpread) }

// dir plans directory d and its missing parents (mode 0755 unless planned before).
func (p *planner) dir(d string, mode uint32) bool {
	if d == "." || d == "" {
		return true
	}
	if t, ok := p.used[d]; ok {
		return t == unix.DT_DIR
	}
	if !p.dir(path.Dir(d), 0o755) {
		return false
	}
	p.used[d] = unix.DT_DIR
	p.ents = append(p.ents, pentry{path: d, typ: unix.DT_DIR, mode: mode, mtime: baseTime})
	return true
}

// draw returns a file size from a log-normal distribution (the shape of file sizes on real
// systems: most small, a long tail of large ones), redrawn above maxFile.
func (p *planner) draw(median, sigma float64) uint64 {
	s := median * math.Exp(sigma*p.r.NormFloat64())
	for try := 0; s > float64(p.maxFile) && try < 8; try++ {
		s = median * math.Exp(sigma*p.r.NormFloat64())
	}
	return min(uint64(s)+1, p.maxFile)
}

// file plans a regular file with a drawn size. It returns false once the target is reached,
// which ends the plan; the file that crosses the target is shortened to land on it exactly.
func (p *planner) file(f string, content uint8, mode uint32, median, sigma float64) bool {
	if p.total >= p.target {
		p.done = true
		return false
	}
	size := min(p.draw(median, sigma), p.target-p.total)
	return p.add(f, content, mode, size)
}

// add plans a regular file of the given size (0 for the few empty files of a rootfs).
// A path that collides with an earlier one is skipped (deterministically).
func (p *planner) add(f string, content uint8, mode uint32, size uint64) bool {
	if _, ok := p.used[f]; ok || !p.dir(path.Dir(f), 0o755) {
		return true
	}
	p.used[f] = unix.DT_REG
	p.total += size
	p.ents = append(p.ents, pentry{path: f, typ: unix.DT_REG, mode: mode, content: content, size: size, mtime: p.mtime()})
	return true
}

func (p *planner) link(l, target string) {
	if _, ok := p.used[l]; ok || !p.dir(path.Dir(l), 0o755) {
		return
	}
	p.used[l] = unix.DT_LNK
	p.ents = append(p.ents, pentry{path: l, typ: unix.DT_LNK, target: target, mtime: p.mtime()})
}

var locales = []string{
	"ar", "bg", "ca", "cs", "da", "de", "el", "es", "eu", "fi", "fr", "gl", "hu", "id", "it",
	"ja", "ko", "nb", "nl", "pl", "pt", "pt_BR", "ro", "ru", "sk", "sl", "sr", "sv", "tr",
	"uk", "vi", "zh_CN", "zh_TW",
}

// Packages of a minimal Debian that every tree starts with; the rest get made-up names.
var basePackages = []string{
	"base-files", "libc6", "bash", "coreutils", "dpkg", "apt", "systemd", "util-linux",
	"perl-base", "python3", "openssl", "tar", "gzip", "findutils", "grep", "sed",
}

func (p *planner) pkgName(i int) string {
	if i < len(basePackages) {
		return basePackages[i]
	}
	for {
		var b []byte
		for range 2 + p.r.IntN(2) {
			b = append(b, syllables[p.r.IntN(len(syllables))]...)
		}
		if p.r.IntN(5) == 0 {
			b = strconv.AppendInt(append(b, '-'), int64(p.r.IntN(9)), 10)
		}
		name := string(b)
		if _, ok := p.used["usr/share/doc/"+name]; !ok {
			return name
		}
	}
}

// skeleton plans what every Debian root has regardless of packages: the top-level
// directories, merged-/usr symlinks, the few empty lock files and some system files.
func (p *planner) skeleton() {
	for _, d := range []string{"boot", "dev", "home", "media", "mnt", "opt", "proc", "run", "srv",
		"sys", "usr/local/bin", "usr/src", "var/cache/apt", "var/log/apt", "var/mail", "var/spool",
		"var/lib/dpkg/info", "var/lib/apt/lists", "etc/default", "etc/init.d"} {
		p.dir(d, 0o755)
	}
	p.dir("root", 0o700)
	p.dir("tmp", 0o1777)
	p.dir("var/tmp", 0o1777)
	for _, l := range [][2]string{
		{"bin", "usr/bin"}, {"sbin", "usr/sbin"}, {"lib", "usr/lib"},
		{"var/run", "/run"}, {"var/lock", "/run/lock"},
		{"etc/mtab", "../proc/self/mounts"}, {"etc/os-release", "../usr/lib/os-release"},
		{"etc/localtime", "/usr/share/zoneinfo/Etc/UTC"},
	} {
		p.link(l[0], l[1])
	}
	for _, f := range []string{"etc/.pwd.lock", "var/lib/dpkg/lock", "var/lib/dpkg/lock-frontend",
		"var/lib/dpkg/triggers/Lock", "var/log/faillog"} {
		p.add(f, contentText, 0o600, 0)
	}
	for _, f := range []struct {
		name   string
		mode   uint32
		median float64
	}{
		{"etc/passwd", 0o644, 1200}, {"etc/group", 0o644, 600}, {"etc/shadow", 0o640, 700},
		{"etc/hostname", 0o644, 12}, {"etc/hosts", 0o644, 180}, {"etc/fstab", 0o644, 300},
		{"etc/profile", 0o644, 800}, {"etc/bash.bashrc", 0o644, 2000}, {"usr/lib/os-release", 0o644, 270},
	} {
		p.file(f.name, contentText, f.mode, f.median, 0.3)
	}
	// The dpkg database grows with the number of packages: ~0.3 % of a real root.
	p.file("var/lib/dpkg/status", contentText, 0o644, float64(p.target)/300, 0.1)
}

// pkg plans the files of one package, spread over the tree like dpkg unpacks them. Each part
// of a package is a step that draws whether the package has it; a step that finds the tree
// full returns false and the later parts are not drawn, so the random stream (and with it the
// tree a seed makes) stays what it was.
func (p *planner) pkg(name string) {
	ok := p.pkgDocs(name) && p.pkgBinaries(name) && p.pkgLibrary(name) && p.pkgPlugins(name) &&
		p.pkgLocales(name) && p.pkgConfig(name) && p.pkgData(name) && p.pkgPython(name) && p.pkgIcons(name)
	p.pkgDpkgInfo(name, ok)
}

// chance draws true with probability x.
func (p *planner) chance(x float64) bool { return p.r.Float64() < x }

// files plans n files named by name(i), each of a size drawn as file draws it, and stops
// when the tree is full (false).
func (p *planner) files(n int, name func(i int) string, content uint8, mode uint32, median, sigma float64) bool {
	for i := range n {
		if !p.file(name(i), content, mode, median, sigma) {
			return false
		}
	}
	return true
}

// pkgDocs plans usr/share/doc/NAME: every package has a copyright and a changelog.
func (p *planner) pkgDocs(name string) bool {
	doc := "usr/share/doc/" + name
	ok := p.file(doc+"/copyright", contentText, 0o644, 1500, 0.8) &&
		p.file(doc+"/changelog.Debian.gz", contentCompressed, 0o644, 1200, 1.0)
	if ok && p.chance(0.25) {
		ok = p.file(doc+"/README", contentText, 0o644, 3000, 1.0)
	}
	if ok && p.chance(0.15) {
		ok = p.file(doc+"/NEWS.gz", contentCompressed, 0o644, 4000, 1.2)
	}
	return ok
}

// pkgBinaries plans the package's programs with their man pages and, rarely, an alternatives
// link pair.
func (p *planner) pkgBinaries(name string) bool {
	r := p.r
	if !p.chance(0.55) {
		return true
	}
	dir := "usr/bin/"
	if p.chance(0.2) {
		dir = "usr/sbin/"
	}
	ok := true
	for i := range 1 + r.IntN(2) + r.IntN(2)*r.IntN(4) {
		bin := name
		if i > 0 {
			bin += []string{"ctl", "d", "-config", "-helper", "info", "-dump"}[i%6] + strconv.Itoa(i/6)
		}
		if ok = p.file(dir+bin, contentBinary, 0o755, 40000, 1.4); !ok {
			break
		}
		if p.chance(0.6) {
			ok = p.file("usr/share/man/man1/"+bin+".1.gz", contentCompressed, 0o644, 1600, 0.9)
		}
		if ok && p.chance(0.04) {
			alt := bin + "-alt"
			p.link("etc/alternatives/"+alt, "/"+dir+bin)
			p.link("usr/bin/"+alt, "/etc/alternatives/"+alt)
		}
	}
	return ok
}

// pkgLibrary plans a shared library and its soname link: libfoo.so.1 -> libfoo.so.1.2.3.
func (p *planner) pkgLibrary(name string) bool {
	r := p.r
	if !p.chance(0.35) {
		return true
	}
	libdir := "usr/lib/" + arch
	maj := r.IntN(4)
	so := "lib" + name + ".so." + strconv.Itoa(maj)
	real := so + "." + strconv.Itoa(r.IntN(20)) + "." + strconv.Itoa(r.IntN(10))
	ok := p.file(libdir+"/"+real, contentBinary, 0o644, 90000, 1.5)
	if ok {
		p.link(libdir+"/"+so, real)
	}
	return ok
}

// pkgPlugins plans plugins in a private directory.
func (p *planner) pkgPlugins(name string) bool {
	if !p.chance(0.12) {
		return true
	}
	return p.files(2+p.r.IntN(10), func(i int) string { return "usr/lib/" + arch + "/" + name + "/mod" + strconv.Itoa(i) + ".so" },
		contentBinary, 0o644, 20000, 1.2)
}

// pkgLocales plans message catalogues: strings plus a hash table, they compress like text.
func (p *planner) pkgLocales(name string) bool {
	r := p.r
	if !p.chance(0.2) {
		return true
	}
	first := r.IntN(len(locales))
	langs := locales[first:min(len(locales), first+3+r.IntN(25))]
	return p.files(len(langs), func(i int) string { return "usr/share/locale/" + langs[i] + "/LC_MESSAGES/" + name + ".mo" },
		contentText, 0o644, 7000, 1.0)
}

// pkgConfig plans configuration files under etc/NAME.
func (p *planner) pkgConfig(name string) bool {
	if !p.chance(0.3) {
		return true
	}
	return p.files(1+p.r.IntN(3), func(i int) string { return "etc/" + name + "/" + name + strconv.Itoa(i) + ".conf" },
		contentText, 0o644, 1200, 1.1)
}

// pkgData plans data files under usr/share/NAME, their content by extension.
func (p *planner) pkgData(name string) bool {
	r := p.r
	if !p.chance(0.3) {
		return true
	}
	exts := []string{".png", ".svg", ".xml", ".dat", ".py", ".jpg", ".txt", ".bin"}
	for i := range 2 + r.IntN(r.IntN(30)+1) {
		ext := exts[r.IntN(len(exts))]
		kind := contentText
		switch ext {
		case ".png", ".jpg":
			kind = contentCompressed
		case ".dat", ".bin":
			kind = contentBinary
		}
		if !p.file("usr/share/"+name+"/data"+strconv.Itoa(i)+ext, kind, 0o644, 2500, 1.4) {
			return false
		}
	}
	return true
}

// pkgPython plans a Python module directory with an empty __init__.py.
func (p *planner) pkgPython(name string) bool {
	if !p.chance(0.12) {
		return true
	}
	py := "usr/lib/python3/dist-packages/" + name
	p.add(py+"/__init__.py", contentText, 0o644, 0)
	return p.files(3+p.r.IntN(15), func(i int) string { return py + "/m" + strconv.Itoa(i) + ".py" },
		contentText, 0o644, 5000, 1.1)
}

// pkgIcons plans the application icon at the usual sizes.
func (p *planner) pkgIcons(name string) bool {
	if !p.chance(0.06) {
		return true
	}
	sizes := []string{"16x16", "32x32", "48x48", "256x256"}
	return p.files(len(sizes), func(i int) string { return "usr/share/icons/hicolor/" + sizes[i] + "/apps/" + name + ".png" },
		contentCompressed, 0o644, 3000, 1.0)
}

// pkgDpkgInfo plans the package's dpkg database entries; ok is false when an earlier part
// found the tree full, and then none is added.
func (p *planner) pkgDpkgInfo(name string, ok bool) {
	info := "var/lib/dpkg/info/" + name
	ok = ok && p.file(info+".list", contentText, 0o644, 900, 0.9) &&
		p.file(info+".md5sums", contentText, 0o644, 1000, 0.9)
	if ok && p.chance(0.3) {
		p.file(info+".postinst", contentText, 0o755, 1500, 0.8)
	}
}

// plan lays out the whole tree for spec.
func plan(spec Spec) []pentry {
	p := &planner{
		r:       rand.New(rand.NewPCG(spec.Seed, 0x706c616e)),
		target:  spec.TargetBytes,
		maxFile: max(1, min(spec.TargetBytes/8, maxFileCap)),
		used:    make(map[string]uint8),
	}
	p.skeleton()
	// The big files that make the heavy tail of a real root (libc, libstdc++, the locale
	// archive), if the tree is big enough for them to stay under TargetBytes/8.
	if p.maxFile >= 4<<20 {
		p.file("usr/lib/"+arch+"/libc.so.6", contentBinary, 0o755, 1.6e6, 0.1)
		p.file("usr/lib/"+arch+"/libstdc++.so.6.0.30", contentBinary, 0o644, 2.1e6, 0.1)
		p.link("usr/lib/"+arch+"/libstdc++.so.6", "libstdc++.so.6.0.30")
		p.file("usr/lib/locale/locale-archive", contentBinary, 0o644, 3e6, 0.1)
	}
	for i := 0; !p.done; i++ {
		p.pkg(p.pkgName(i))
	}
	return p.ents
}

// Generate writes a deterministic rootfs-like tree of about spec.TargetBytes into dir, which
// must exist and be empty, and returns its Stats (as Describe measures them). Contents are
// generated while writing, one chunk of at most 256 KiB at a time, so memory use does not
// grow with the size of the tree. Writes land in the page cache: a caller that times
// generation must sync.
func Generate(ctx context.Context, dir string, spec Spec) (Stats, error) {
	if spec.TargetBytes == 0 {
		return Stats{}, errors.New("dataset: generate: target size is 0: give a size of at least a few KiB")
	}
	if err := checkEmpty(dir); err != nil {
		return Stats{}, err
	}
	ents := plan(spec)
	buf := make([]byte, genChunk)
	var gen contentGen
	contentSeed := spec.Seed ^ 0x636f6e74656e74
	for i := range ents {
		e := &ents[i]
		if err := ctx.Err(); err != nil {
			return Stats{}, fmt.Errorf("dataset: generate in %s: %w", dir, err)
		}
		p := dir + "/" + e.path
		switch e.typ {
		case unix.DT_DIR:
			if err := unix.Mkdir(p, 0o700); err != nil {
				return Stats{}, wrapPathErr("generate: mkdir", p, err)
			}
			// Explicit chmod: mkdir's mode is filtered by the umask.
			if err := unix.Chmod(p, e.mode); err != nil {
				return Stats{}, wrapPathErr("generate: chmod", p, err)
			}
		case unix.DT_LNK:
			if err := unix.Symlink(e.target, p); err != nil {
				return Stats{}, wrapPathErr("generate: symlink", p, err)
			}
			if err := setTimes(p, e.mtime); err != nil {
				return Stats{}, err
			}
		case unix.DT_REG:
			var magic []byte
			if e.content == contentCompressed {
				magic = magics[path.Ext(e.path)]
			}
			gen.reset(e.content, contentSeed, uint64(i), magic)
			if err := writeFile(ctx, p, e.mode, e.size, buf, gen.fill); err != nil {
				return Stats{}, err
			}
			if err := setTimes(p, e.mtime); err != nil {
				return Stats{}, err
			}
		}
	}
	// Directory times last: creating entries in a directory updates its mtime.
	for i := range ents {
		if ents[i].typ == unix.DT_DIR {
			if err := setTimes(dir+"/"+ents[i].path, ents[i].mtime); err != nil {
				return Stats{}, err
			}
		}
	}
	if err := setTimes(dir, baseTime); err != nil {
		return Stats{}, err
	}
	return Describe(ctx, dir)
}

func checkEmpty(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dataset: generate: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && err != io.EOF {
		return fmt.Errorf("dataset: generate: reading %s: %w", dir, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("dataset: generate: %s is not empty (contains %q): give an empty directory", dir, names[0])
	}
	return nil
}

// writeFile creates p (which must not exist) and writes size bytes produced by fill, chunk
// by chunk, checking ctx between chunks.
func writeFile(ctx context.Context, p string, mode uint32, size uint64, buf []byte, fill func([]byte)) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return wrapPathErr("create", p, err)
	}
	for left := size; left > 0; {
		if err := ctx.Err(); err != nil {
			unix.Close(fd)
			return fmt.Errorf("dataset: writing %s: %w", p, err)
		}
		chunk := buf[:min(left, uint64(len(buf)))]
		fill(chunk)
		if err := writeAll(fd, chunk); err != nil {
			unix.Close(fd)
			return wrapPathErr("write", p, err)
		}
		left -= uint64(len(chunk))
	}
	// Explicit chmod: open's mode is filtered by the umask.
	if err := unix.Fchmod(fd, mode); err != nil {
		unix.Close(fd)
		return wrapPathErr("chmod", p, err)
	}
	if err := unix.Close(fd); err != nil {
		return wrapPathErr("close", p, err)
	}
	return nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b = b[n:]
	}
	return nil
}

func setTimes(p string, mtime int64) error {
	ts := []unix.Timespec{unix.NsecToTimespec(mtime * 1e9), unix.NsecToTimespec(mtime * 1e9)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return wrapPathErr("set times", p, err)
	}
	return nil
}

// wrapPathErr wraps err with the operation and path, and with what to do when the
// filesystem is full (the usual failure when a dataset does not fit).
func wrapPathErr(op, p string, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("dataset: %s %s: %w (the filesystem is full: use a bigger device or a smaller dataset)", op, p, err)
	}
	return fmt.Errorf("dataset: %s %s: %w", op, p, err)
}
