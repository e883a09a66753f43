package fs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/confine"
	"github.com/fsbench/fsbench/internal/mountinfo"
	"github.com/fsbench/fsbench/internal/testkit/testdev"
)

// mountPool is what TestConfinedMountWords draws a filesystem's mount words from: options the
// filesystem has (each with a value when it takes one), and keys that take a path. Options that
// name a device by number (ext4's journal_dev=) are not here: no namespace can narrow a number,
// the word check refuses them (TestCheckMountOptions).
var mountPool = map[string]struct{ opts, pathKeys []string }{
	"ext4": {opts: []string{"data=ordered", "data=writeback", "commit=5", "barrier=0", "nodelalloc", "discard", "errors=remount-ro",
		"noload", "journal_checksum", "init_itable=0", "nombcache", "jqfmt=vfsv0", "max_batch_time=0", "dioread_nolock", "noauto_da_alloc"},
		pathKeys: []string{"journal_path", "usrjquota", "grpjquota"}},
	"ext3": {opts: []string{"data=ordered", "commit=5", "barrier=1", "errors=continue", "noload", "nouid32"},
		pathKeys: []string{"journal_path", "usrjquota"}},
	"ext2": {opts: []string{"errors=continue", "nouid32", "sb=1", "user_xattr", "acl", "noacl"}},
	"xfs": {opts: []string{"noalign", "logbufs=8", "logbsize=32k", "inode64", "largeio", "discard", "nouuid", "allocsize=64k", "wsync",
		"attr2", "filestreams"}, pathKeys: []string{"logdev", "rtdev"}},
	"btrfs": {opts: []string{"compress=zstd", "ssd", "nossd", "space_cache=v2", "degraded", "commit=30", "discard=async", "nodatacow",
		"autodefrag", "flushoncommit", "subvol=/"}, pathKeys: []string{"device"}},
	"f2fs": {opts: []string{"background_gc=on", "discard", "nodiscard", "inline_xattr", "noinline_data", "active_logs=6",
		"fsync_mode=posix", "mode=adaptive", "checkpoint_merge"}},
	"vfat":     {opts: []string{"iocharset=utf8", "codepage=437", "utf8", "shortname=mixed", "uid=0", "gid=0", "umask=022", "flush", "tz=UTC", "errors=remount-ro"}},
	"nilfs2":   {opts: []string{"order=strict", "order=relaxed", "barrier", "nobarrier", "cp=1", "discard", "errors=continue"}},
	"squashfs": {opts: []string{"errors=continue", "threads=multi", "threads=single"}},
	"erofs": {opts: []string{"cache_strategy=readaround", "user_xattr", "acl", "noacl", "fsid=x", "domain_id=y"},
		pathKeys: []string{"device"}},
}

// mountFlagWords are mount(8)'s flags, which MountFlags turns into MS_* bits.
var mountFlagWords = []string{"ro", "rw", "noatime", "relatime", "strictatime", "nodiratime", "lazytime", "sync", "dirsync",
	"nosuid", "nodev", "noexec", "silent", "iversion", "defaults"}

// TestConfinedMountWords is the property test of mount words: for every filesystem this kernel
// mounts, it generates at least 200 mount option lists from the filesystem's own options, with
// values naming a decoy device every way we know (its /dev path, a node of it on the root
// filesystem outside /dev, symlinks to either, /proc/1/root/..., /proc/self/root/..., ../..
// paths, a relative name, sysfs), under the keys that take paths (journal_path=, logdev=,
// rtdev=, device=, usrjquota=) and under source= and keys the filesystem does not have. Each list
// is mounted through the mount jail directly (confine.Mount: the word check saves nothing), and
// unmounted when it mounted; the decoy's write and discard counters must not move after any of
// them, and its sha256 must be unchanged after each filesystem. This host's kernel lacks f2fs,
// vfat and nilfs2: vm.TestGuestConfined runs this test in the QEMU guest, where they are.
func TestConfinedMountWords(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts every filesystem a few hundred times (-short)")
	}
	sys := needConfinement(t)
	if err := confine.MountAvailable(); err != nil {
		t.Fatalf("no mount jail as root: %v", err)
	}
	perFS := 200
	if v, err := strconv.Atoi(os.Getenv("FSBENCH_CONFINE_WORDS")); err == nil && v > 0 {
		perFS = v
	}
	decoy := testdev.Loop(t, 64<<20, "the decoy's data, which no mount may touch ")
	before := testdev.Sum(t, decoy)
	var st unix.Stat_t
	if err := unix.Stat(decoy, &st); err != nil {
		t.Fatal(err)
	}
	// Ways to the decoy that a path can take, made on the root filesystem (t.TempDir()).
	here := t.TempDir()
	node := filepath.Join(here, "decoy-node")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"card": decoy, "card-node": node} {
		if err := os.Symlink(to, filepath.Join(here, name)); err != nil {
			t.Fatal(err)
		}
	}
	up := strings.Repeat("../", 12)
	paths := []string{decoy, node, filepath.Join(here, "card"), filepath.Join(here, "card-node"), "/proc/1/root" + decoy,
		"/proc/self/root" + decoy, "/proc/1/root" + node, up + strings.TrimPrefix(node, "/"), up + strings.TrimPrefix(decoy, "/"),
		"card", "/dev/../" + decoy, fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))}
	t.Logf("decoy %s (sha256 %s), a node of it at %s", decoy, before[:16], node)

	names := []string{"ext4", "ext3", "ext2", "xfs", "btrfs", "f2fs", "vfat", "nilfs2", "squashfs", "erofs"}
	if only := os.Getenv("FSBENCH_CONFINE_MOUNT_FS"); only != "" {
		// The QEMU guest, slow under TCG, runs only what this host's kernel cannot mount.
		names = strings.Split(only, ",")
	}
	var summary []string
	for i, name := range names {
		k, _ := Lookup(name)
		if a := sys.Check(k); !a.Runs {
			t.Logf("%s: not on this machine (%s)", name, a.Reason)
			continue
		}
		if sys.Check(k).Kernel == KernelModuleAvailable {
			LoadModule(context.Background(), nil, sys, k)
		}
		dut := attachLoop(t, imageSize)
		makeForMount(t, k, dut)
		mnt := mountDir(t, k)
		r := rand.New(rand.NewPCG(uint64(i)+1, 37))
		mounted, refused, reachy := 0, 0, 0
		for n := 0; n < perFS; n++ {
			opts := mountWords(r, name, paths)
			if strings.Contains(opts, decoy) || strings.Contains(opts, "card") || strings.Contains(opts, node) {
				reachy++
			}
			w0 := writes(t, decoy)
			flags, data, err := MountFlags(opts)
			if err != nil {
				t.Fatalf("generated %q: %v", opts, err)
			}
			if k.ReadOnly {
				flags |= unix.MS_RDONLY
			}
			err = confine.Mount(dut, mnt, name, flags, data)
			if err == nil {
				mounted++
				if _, uerr := mountinfo.Unmount(context.Background(), mnt, mountinfo.UnmountOptions{}); uerr != nil {
					t.Fatalf("unmount after %q: %v", opts, uerr)
				}
			} else {
				refused++
			}
			if w := writes(t, decoy); w != w0 {
				t.Fatalf("%s mount -o %q moved the decoy's counters (%s -> %s): %v", name, opts, w0, w, err)
			}
		}
		if got := testdev.Sum(t, decoy); got != before {
			t.Fatalf("after %s's mounts the decoy's sha256 is %s, was %s", name, got, before)
		}
		summary = append(summary, fmt.Sprintf("%-9s %4d generated, %3d naming the decoy, %3d mounted, %3d refused by the kernel", name, perFS, reachy, mounted, refused))
		if mounted == 0 {
			t.Errorf("%s: none of %d option lists mounted: the test proves nothing about the jail's mounts (is the filesystem on %s?)", name, perFS, dut)
		}
	}
	t.Logf("through the mount jail, decoy byte-identical:\n%s", strings.Join(summary, "\n"))
}

// makeForMount puts a filesystem of kind k on dev (a built image for a read-only kind).
func makeForMount(t *testing.T, k Kind, dev string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(WithWorkDir(context.Background(), t.TempDir()), 2*time.Minute)
	defer cancel()
	if k.ReadOnly {
		src, _ := sourceTree(t)
		img := filepath.Join(t.TempDir(), k.Name+".img")
		if err := BuildImage(ctx, nil, k, src, img, nil); err != nil {
			t.Fatal(err)
		}
		writeImage(t, img, dev)
		return
	}
	var args []string
	if k.Name == "nilfs2" {
		args = []string{"-B", "256"} // 1 MiB segments: the default 8 MiB wants more than the device
	}
	if err := Mkfs(ctx, nil, k, dev, args); err != nil {
		t.Fatal(err)
	}
}

// mountWords draws one mount option list for filesystem name: one to four words, flags, the
// filesystem's options, and, in two lists of three, a path from paths under a key that takes one,
// under source= or under a key the filesystem lacks.
func mountWords(r *rand.Rand, name string, paths []string) string {
	pool := mountPool[name]
	var w []string
	for range 1 + r.IntN(4) {
		switch x := r.IntN(10); {
		case x < 3:
			w = append(w, mountFlagWords[r.IntN(len(mountFlagWords))])
		case x < 6 && len(pool.opts) > 0:
			w = append(w, pool.opts[r.IntN(len(pool.opts))])
		default:
			keys := append([]string{"source", "journal_path", "logdev", "device", "nosuchkey"}, pool.pathKeys...)
			if len(pool.pathKeys) > 0 && r.IntN(2) == 0 {
				keys = pool.pathKeys
			}
			w = append(w, keys[r.IntN(len(keys))]+"="+paths[r.IntN(len(paths))])
		}
	}
	return strings.Join(w, ",")
}
