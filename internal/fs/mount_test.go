package fs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestMountFlags(t *testing.T) {
	tests := []struct {
		options string
		flags   uintptr
		data    string
		err     string // fragment of the error; "" means no error
	}{
		{"", 0, "", ""},
		{"defaults", 0, "", ""},
		{"ro", unix.MS_RDONLY, "", ""},
		{"ro,rw", 0, "", ""},
		{"rw,ro", unix.MS_RDONLY, "", ""},
		{"ro,defaults", unix.MS_RDONLY, "", ""},
		{"noatime", unix.MS_NOATIME, "", ""},
		{"noatime,nodiratime,discard", unix.MS_NOATIME | unix.MS_NODIRATIME, "discard", ""},
		{"relatime,noatime", unix.MS_NOATIME, "", ""},
		{"noatime,strictatime", unix.MS_STRICTATIME, "", ""},
		{"strictatime,relatime", unix.MS_RELATIME, "", ""},
		{"noatime,atime", 0, "", ""},
		{"lazytime,nolazytime,lazytime", unix.MS_LAZYTIME, "", ""},
		{"sync,async", 0, "", ""},
		{"dirsync", unix.MS_DIRSYNC, "", ""},
		{"nodev,nosuid,noexec", unix.MS_NODEV | unix.MS_NOSUID | unix.MS_NOEXEC, "", ""},
		{"noexec,exec", 0, "", ""},
		{"compress=zstd:3,noatime,space_cache=v2", unix.MS_NOATIME, "compress=zstd:3,space_cache=v2", ""},
		{"data=writeback,commit=60,lazytime", unix.MS_LAZYTIME, "data=writeback,commit=60", ""},
		{"discard,inline_xattr,bogus_option", 0, "discard,inline_xattr,bogus_option", ""},
		{"noauto,nofail,x-systemd.automount,comment=foo,discard", 0, "discard", ""},
		// "noatime=1" is not the flag: the filesystem gets it and says what it thinks.
		{"noatime=1", 0, "noatime=1", ""},
		{"noatime, discard", 0, "", "whitespace"},
		{" noatime", 0, "", "whitespace"},
		{"noatime\tdiscard", 0, "", "whitespace"},
		{"noatime,,discard", 0, "", "empty option"},
		{"noatime,", 0, "", "empty option"},
		{",", 0, "", "empty option"},
		{"remount,ro", 0, "", `"remount" changes an existing mount`},
		{"bind", 0, "", "changes an existing mount"},
	}
	for _, tt := range tests {
		flags, data, err := MountFlags(tt.options)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("MountFlags(%q) error = %v, want one with %q", tt.options, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("MountFlags(%q): %v", tt.options, err)
			continue
		}
		if flags != tt.flags || data != tt.data {
			t.Errorf("MountFlags(%q) = %#x, %q; want %#x, %q", tt.options, flags, data, tt.flags, tt.data)
		}
	}
}

func TestMountError(t *testing.T) {
	tests := []struct {
		kind, options string
		errno         unix.Errno
		want          []string
	}{
		{"xfs", "noatime", unix.ENODEV, []string{
			"mount -t xfs /dev/loop3 on /x (options noatime): no such device: this kernel has no xfs", "modprobe xfs"}},
		{"ext4", "noatime,bogus", unix.EINVAL, []string{
			"mount -t ext4 /dev/loop3 on /x (options noatime,bogus): invalid argument", "a bad option", "dmesg"}},
		{"btrfs", "", unix.EBUSY, []string{"(options none)", "in use or already mounted"}},
		{"erofs", "", unix.ENOTBLK, []string{"not a block device", "loop device"}},
		{"ext4", "", unix.EIO, []string{"mount -t ext4 /dev/loop3 on /x (options none): input/output error"}},
	}
	for _, tt := range tests {
		err := mountError(mustLookup(t, tt.kind), "/dev/loop3", "/x", tt.options, tt.errno)
		if !errors.Is(err, tt.errno) {
			t.Errorf("%v: errno lost: %v", tt.errno, err)
		}
		if !containsAll(err.Error(), tt.want...) {
			t.Errorf("error %q lacks one of %q", err, tt.want)
		}
	}
}

func TestUsageOf(t *testing.T) {
	tests := []struct {
		name string
		st   unix.Statfs_t
		want Usage
	}{
		{"4 KiB blocks", unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 1000, Bfree: 600, Bavail: 550, Files: 256, Ffree: 200},
			Usage{TotalBytes: 4096000, UsedBytes: 1638400, FreeBytes: 2457600, AvailBytes: 2252800, Files: 256, FreeFiles: 200}},
		// 2^32 blocks of 4 KiB: 16 TiB, beyond 32 bits however the block size field is typed.
		{"no 32-bit overflow", unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 1 << 32, Bfree: 1 << 31, Bavail: 1 << 31},
			Usage{TotalBytes: 1 << 44, UsedBytes: 1 << 43, FreeBytes: 1 << 43, AvailBytes: 1 << 43}},
		{"no fragment size: block size", unix.Statfs_t{Bsize: 1024, Blocks: 10, Bfree: 4, Bavail: 4},
			Usage{TotalBytes: 10240, UsedBytes: 6144, FreeBytes: 4096, AvailBytes: 4096}},
		// Captured from erofs on this machine: f_files = ULLONG_MAX means no fixed count.
		{"erofs: unlimited inodes", unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 79, Files: ^uint64(0), Ffree: ^uint64(0) - 7},
			Usage{TotalBytes: 323584, UsedBytes: 323584}},
		{"more free than blocks: used 0, not a wrap", unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 10, Bfree: 11},
			Usage{TotalBytes: 40960, UsedBytes: 0, FreeBytes: 45056}},
	}
	for _, tt := range tests {
		if got := usageOf(&tt.st); got != tt.want {
			t.Errorf("%s: usageOf = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestStatUsageHere(t *testing.T) {
	u, err := StatUsage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes == 0 || u.UsedBytes > u.TotalBytes || u.FreeBytes > u.TotalBytes || u.AvailBytes > u.FreeBytes {
		t.Errorf("inconsistent usage of the temp directory's filesystem: %+v", u)
	}
	if _, err := StatUsage("/nonexistent/fsbench"); err == nil || !strings.Contains(err.Error(), "statfs /nonexistent/fsbench") {
		t.Errorf("StatUsage of a missing dir: %v", err)
	}
}

func TestMountTmpfsZero(t *testing.T) {
	if err := MountTmpfs(t.TempDir(), 0); err == nil || !strings.Contains(err.Error(), "size 0") {
		t.Errorf("MountTmpfs(size 0) = %v, want a refusal (0 means unlimited to tmpfs)", err)
	}
}

// withDefaultRunner swaps DefaultRunner for f during the test: nilfs2 mounts go through mount(8).
func withDefaultRunner(t *testing.T, f *fakeRunner) {
	t.Helper()
	saved := DefaultRunner
	DefaultRunner = f.run
	t.Cleanup(func() { DefaultRunner = saved })
}

// noJail makes this package take the path of a machine that allows no jail, for the test.
func noJail(t *testing.T) {
	t.Helper()
	a, m := jailAvailable, mountJailAvailable
	why := errors.New("no namespaces here (a test)")
	jailAvailable, mountJailAvailable = func() error { return why }, func() error { return why }
	t.Cleanup(func() { jailAvailable, mountJailAvailable = a, m })
}

// TestNilfs2ThroughMount8 is nilfs2 where no jail can be made: the defaults go through mount(8),
// whose helper starts the cleaner, and options are refused (mount.nilfs2 would run in fsbench's
// own namespace).
func TestNilfs2ThroughMount8(t *testing.T) {
	ctx := context.Background()
	nilfs := mustLookup(t, "nilfs2")
	noJail(t)

	f := &fakeRunner{}
	withDefaultRunner(t, f)
	var ue *UnconfinedError
	if err := Mount(ctx, nilfs, "/dev/loop9", "/mnt/x", "noatime,order=strict"); !errors.As(err, &ue) {
		t.Errorf("options without a jail: %v, want them refused", err)
	}
	if err := Mount(ctx, nilfs, "/dev/loop9", "/mnt/x", ""); err != nil {
		t.Fatal(err)
	}
	want := []call{
		{"mount", []string{"-t", "nilfs2", "/dev/loop9", "/mnt/x"}},
	}
	if diff := cmp.Diff(want, f.calls, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	// The message mount.nilfs2 prints on a kernel without nilfs2 (captured on this machine).
	f.out = []byte("mount.nilfs2: cannot find or load nilfs2 filesystem\n")
	f.err = errors.New("exit status 32")
	err := Mount(ctx, nilfs, "/dev/loop9", "/mnt/x", "")
	if err == nil || !containsAll(err.Error(), "mount -t nilfs2 /dev/loop9 on /mnt/x (options none)", "exit status 32", "this kernel has no nilfs2") {
		t.Errorf("Mount on a kernel without nilfs2: %v", err)
	}

	// Not mounted: no umount run, no error.
	f.calls = nil
	if err := Unmount(ctx, nilfs, t.TempDir()); err != nil {
		t.Errorf("Unmount of an unmounted nilfs2 dir: %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("ran %v for a directory that is not mounted", f.calls)
	}
}

// TestNilfsOptions splits mount.nilfs2's own options from the kernel's.
func TestNilfsOptions(t *testing.T) {
	for _, tc := range []struct {
		in, pp, rest string
		gc           bool
		bad          bool
	}{
		{in: "", gc: true},
		{in: "pp=0,order=strict", pp: "0", rest: "order=strict", gc: true},
		{in: "nogc,noatime", rest: "noatime"},
		{in: "pp=-1", bad: true},
		{in: "gcpid=1", bad: true},
	} {
		pp, gc, rest, err := nilfsOptions(tc.in)
		if (err != nil) != tc.bad || err == nil && (pp != tc.pp || gc != tc.gc || rest != tc.rest) {
			t.Errorf("%q: pp %q gc %v rest %q err %v", tc.in, pp, gc, rest, err)
		}
	}
}

// TestMountWithoutJail: where no mount jail can be made, a mount with the user's options is
// refused, whatever the filesystem, and says why and what to do.
func TestMountWithoutJail(t *testing.T) {
	noJail(t)
	for _, name := range []string{"ext4", "btrfs", "jffs2", "nilfs2"} {
		k := mustLookup(t, name)
		err := Mount(context.Background(), k, "/dev/loop9", "/mnt/x", "noatime")
		var ue *UnconfinedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "remove the options") {
			t.Errorf("%s with options and no jail: %v", name, err)
		}
	}
}
