package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// The tests in this file make real filesystems on loop devices over sparse files in t.TempDir(),
// and mount them. They need root; they leave no loop device and no mount behind.

const imageSize = 320 << 20 // mkfs.xfs refuses devices under 300 MB

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches loop devices and mounts filesystems")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("needs losetup (util-linux)")
	}
}

// attachLoop makes a sparse image of size bytes and attaches it to a free loop device with direct
// I/O, as fsbench's default target does; the device is detached at cleanup.
func attachLoop(t *testing.T, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", "--direct-io=on", img).CombinedOutput()
	if err != nil {
		// tmpfs takes no direct I/O before Linux 6.6, and the QEMU guest's kernel (6.1), where
		// these tests run too (vm.TestGuestConfined), answers LOOP_CONFIGURE with EINVAL: the
		// tests need a device, not direct I/O.
		t.Logf("losetup --direct-io=on: %v: %s; attaching without direct I/O", err, strings.TrimSpace(string(out)))
		out, err = exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	if !strings.HasPrefix(dev, "/dev/loop") {
		t.Fatalf("losetup printed %q, not a loop device", out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// mountDir returns an empty directory to mount on, and makes sure at cleanup that nothing is left
// mounted on it (the cleanup runs before the directory is removed).
func mountDir(t *testing.T, k Kind) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if m, _ := mountinfo.MountedAt(dir); m {
			t.Errorf("%s still mounted at the end of the test; unmounting", dir)
			if err := Unmount(context.Background(), k, dir); err != nil {
				t.Error(err)
			}
		}
	})
	return dir
}

// sourceTree makes a small directory tree to build read-only images from.
func sourceTree(t *testing.T) (dir string, files map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	files = map[string][]byte{
		"etc/hostname":     []byte("fsbench\n"),
		"usr/lib/data.bin": bytes.Repeat([]byte("0123456789abcdef"), 20000),
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("etc/hostname", filepath.Join(dir, "hostname")); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

// writeImage copies an image file onto the block device, as fsbench does for read-only kinds.
func writeImage(t *testing.T, img, dev string) {
	t.Helper()
	in, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatalf("copy %s to %s: %v", img, dev, err)
	}
	if err := out.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationKinds(t *testing.T) {
	needRoot(t)
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			a := sys.Check(k)
			if !a.Runs {
				t.Skipf("this machine cannot run %s: %s", k.Name, a.Reason)
			}
			if a.Kernel == KernelModuleAvailable {
				if st := LoadModule(context.Background(), nil, sys, k); st.State == ModuleUnavailable {
					t.Skipf("%s: %s", k.Name, st.Error)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dev := attachLoop(t, imageSize)
			var files map[string][]byte
			if k.ReadOnly {
				var src string
				src, files = sourceTree(t)
				img := filepath.Join(t.TempDir(), k.Name+".img")
				if err := BuildImage(ctx, nil, k, src, img, nil); err != nil {
					t.Fatal(err)
				}
				writeImage(t, img, dev)
			} else if err := Mkfs(ctx, nil, k, dev, nil); err != nil {
				t.Fatal(err)
			}

			dir := mountDir(t, k)
			if err := Mount(ctx, k, dev, dir, ""); err != nil {
				t.Fatal(err)
			}
			if m, err := mountinfo.MountedAt(dir); err != nil || !m {
				t.Fatalf("after Mount, %s is not in the mount table (%v)", dir, err)
			}
			if k.ReadOnly {
				for rel, want := range files {
					got, err := os.ReadFile(filepath.Join(dir, rel))
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("%s from the image: %d bytes, %v; want %d bytes as written", rel, len(got), err, len(want))
					}
				}
				if target, err := os.Readlink(filepath.Join(dir, "hostname")); err != nil || target != "etc/hostname" {
					t.Errorf("symlink in the image: %q, %v", target, err)
				}
				if err := os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o644); !errors.Is(err, unix.EROFS) {
					t.Errorf("writing to a read-only %s: %v, want EROFS", k.Name, err)
				}
			} else {
				data := bytes.Repeat([]byte{0x5a}, 1<<20)
				p := filepath.Join(dir, "file")
				f, err := os.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(data); err != nil {
					t.Fatal(err)
				}
				// syncfs, not sync: statfs must count the file's blocks (delayed allocation
				// may not have placed them yet), and a global sync would wait for the
				// whole machine's dirty data.
				if err := unix.Syncfs(int(f.Fd())); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				if k.Symlinks {
					if err := os.Symlink("file", filepath.Join(dir, "link")); err != nil {
						t.Errorf("symlink on %s: %v", k.Name, err)
					}
				}
			}
			u, err := StatUsage(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s usage: %+v", k.Name, u)
			if u.UsedBytes == 0 || u.UsedBytes > u.TotalBytes || u.TotalBytes > imageSize {
				t.Errorf("usage of %s: %+v; want 0 < used <= total <= %d", k.Name, u, imageSize)
			}
			if !k.ReadOnly && u.UsedBytes < 1<<20 {
				t.Errorf("%s: used %d bytes after writing 1 MiB", k.Name, u.UsedBytes)
			}

			if err := Unmount(ctx, k, dir); err != nil {
				t.Fatal(err)
			}
			if m, _ := mountinfo.MountedAt(dir); m {
				t.Fatalf("%s still mounted after Unmount", dir)
			}
			if err := Unmount(ctx, k, dir); err != nil {
				t.Errorf("Unmount of a directory that is not mounted: %v, want nil", err)
			}
		})
	}
}

// mountOptions returns the per-mount options of dir from /proc/self/mountinfo.
func mountOptions(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == dir {
			return strings.Split(f[5], ",")
		}
	}
	t.Fatalf("%s is not mounted", dir)
	return nil
}

func hasOption(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

func TestIntegrationMountOptions(t *testing.T) {
	needRoot(t)
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	k := mustLookup(t, "ext4")
	if a := sys.Check(k); !a.Runs {
		t.Skipf("needs ext4: %s", a.Reason)
	}
	ctx := context.Background()
	dev := attachLoop(t, imageSize)
	if err := Mkfs(ctx, nil, k, dev, nil); err != nil {
		t.Fatal(err)
	}
	dir := mountDir(t, k)

	for _, tt := range []struct {
		options string
		want    []string // per-mount options that must show
		absent  []string
	}{
		{"noatime", []string{"rw", "noatime"}, []string{"relatime"}},
		{"ro,nodev,relatime", []string{"ro", "nodev", "relatime"}, []string{"noatime"}},
	} {
		if err := Mount(ctx, k, dev, dir, tt.options); err != nil {
			t.Fatal(err)
		}
		opts := mountOptions(t, dir)
		for _, o := range tt.want {
			if !hasOption(opts, o) {
				t.Errorf("mounted with %q: options %v lack %s", tt.options, opts, o)
			}
		}
		for _, o := range tt.absent {
			if hasOption(opts, o) {
				t.Errorf("mounted with %q: options %v have %s", tt.options, opts, o)
			}
		}
		if err := Unmount(ctx, k, dir); err != nil {
			t.Fatal(err)
		}
	}

	// A filesystem option ext4 does not know: the kernel refuses it, and the error names it.
	err = Mount(ctx, k, dev, dir, "noatime,fsbench_bogus_option")
	if err == nil {
		t.Fatal("Mount with a bad option succeeded")
	}
	t.Logf("bad option: %v", err)
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "fsbench_bogus_option") {
		t.Errorf("bad option error = %v; want EINVAL naming the option", err)
	}
	if m, _ := mountinfo.MountedAt(dir); m {
		t.Error("mounted despite the error")
	}

	// A type this kernel lacks: ENODEV, said in words.
	for _, name := range []string{"f2fs", "nilfs2", "vfat"} {
		if hasFilesystem(sys.ProcFilesystems, name) {
			continue
		}
		missing := mustLookup(t, name)
		if name == "nilfs2" {
			// nilfs2 goes through mount(8), which must tell the same story.
			if _, err := exec.LookPath("mount"); err != nil {
				continue
			}
		}
		err := Mount(ctx, missing, dev, dir, "")
		if err == nil {
			t.Fatalf("mounting %s on a kernel without it succeeded", name)
		}
		t.Logf("missing %s: %v", name, err)
		if !strings.Contains(err.Error(), "this kernel has no "+name) {
			t.Errorf("mount of missing %s: %v", name, err)
		}
		if name != "nilfs2" && !errors.Is(err, unix.ENODEV) {
			t.Errorf("mount of missing %s: %v, want ENODEV", name, err)
		}
	}
}

func TestIntegrationTmpfs(t *testing.T) {
	needRoot(t)
	dir := mountDir(t, Kind{Name: "tmpfs"})
	const size = 64 << 20
	if err := MountTmpfs(dir, size); err != nil {
		t.Fatal(err)
	}
	u, err := StatUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes != size {
		t.Errorf("tmpfs total = %d, want %d", u.TotalBytes, size)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if u, err = StatUsage(dir); err != nil || u.UsedBytes < 4<<20 {
		t.Errorf("after writing 4 MiB: %+v, %v", u, err)
	}
	// Beyond the size: ENOSPC, not the machine's memory.
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, size), 0o644); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("writing past the size: %v, want ENOSPC", err)
	}

	// Busy: a process holds a file open. Unmount retries, and gives up when the context ends.
	holder, err := os.Open(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err = Unmount(ctx, Kind{Name: "tmpfs"}, dir)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "busy") {
		t.Errorf("Unmount of a busy tmpfs = %v, want busy and the deadline", err)
	}
	// A holder that lets go within the retry time, as udev and blkid do, is waited for.
	go func() {
		time.Sleep(100 * time.Millisecond)
		holder.Close()
	}()
	if err := UnmountTmpfs(dir); err != nil {
		t.Fatal(err)
	}
	if m, _ := mountinfo.MountedAt(dir); m {
		t.Fatal("tmpfs still mounted after UnmountTmpfs")
	}
	if err := UnmountTmpfs(dir); err != nil {
		t.Errorf("UnmountTmpfs when not mounted: %v, want nil", err)
	}
}

// TestConfinedTools runs every installed mkfs, checker and image builder through its jail on a
// loop device (the kernel need not have the filesystem: only mounting needs it): each must work
// confined, and its checker find its fresh filesystem clean.
func TestConfinedTools(t *testing.T) {
	sys := needConfinement(t)
	for _, k := range Kinds() {
		if k.Flash || k.NotMainline != "" {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			if _, err := sys.LookPath(k.Tool); err != nil {
				t.Skipf("%s not installed (Debian package %s)", k.Tool, k.Package)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if k.ReadOnly {
				src, _ := sourceTree(t)
				img := filepath.Join(t.TempDir(), "image")
				if err := BuildImage(ctx, nil, k, src, img, nil); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(img); err != nil || fi.Size() == 0 {
					t.Fatalf("no image built: %v", err)
				}
				return
			}
			dev := attachLoop(t, imageSize)
			if err := Mkfs(ctx, nil, k, dev, nil); err != nil {
				t.Fatal(err)
			}
			got, out, err := Check(ctx, nil, k, dev)
			if err != nil || (got != FsckClean && got != FsckNone) {
				t.Fatalf("check of a fresh %s: %s, %v:\n%s", k.Name, got, err, out)
			}
			if got == FsckNone {
				return
			}
			if got, out, err := Repair(ctx, nil, k, dev); err != nil || got != FsckRepaired {
				t.Fatalf("repair of a fresh %s: %s, %v:\n%s", k.Name, got, err, out)
			}
		})
	}
}

// TestIntegrationKernelFSDetach mounts a filesystem of the kernel's own the way tracefs and
// cgroup2 are (MountKernelFS), keeps it busy, and takes it out at once as a dead simulated
// card's mount is (mountinfo.Unmount with Detach): no retries, nothing left in the tree.
func TestIntegrationKernelFSDetach(t *testing.T) {
	needRoot(t)
	dir := mountDir(t, Kind{Name: "tracefs"})
	if err := MountKernelFS("nodev", dir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
		if errors.Is(err, unix.ENODEV) {
			t.Skipf("this kernel has no tracefs (CONFIG_TRACING): %v", err)
		}
		t.Fatal(err)
	}
	ms, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(ms, func(e mountinfo.Entry) bool { return e.MountPoint == dir }); i < 0 || ms[i].FSType != "tracefs" {
		t.Fatalf("no tracefs at %s after MountKernelFS", dir)
	}
	holder, err := os.Open(dir) // busy: a plain umount(2) would fail with EBUSY
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	how, err := mountinfo.Unmount(context.Background(), dir, mountinfo.UnmountOptions{Detach: true})
	if err != nil || how != mountinfo.Detached {
		t.Fatalf("Unmount with Detach of a busy mount = %v, %v; want Detached", how, err)
	}
	if m, _ := mountinfo.MountedAt(dir); m {
		t.Fatal("still mounted after a lazy detach")
	}
	if how, err := mountinfo.Unmount(context.Background(), dir, mountinfo.UnmountOptions{Detach: true}); err != nil || how != mountinfo.NotMounted {
		t.Errorf("Unmount with Detach when not mounted = %v, %v; want NotMounted", how, err)
	}
}

// TestNilfs2Jailed mounts nilfs2 as fsbench does: the mount(2) in a mount jail, then
// nilfs_cleanerd (which mount.nilfs2 would start) in a jail of its own, with the protection period
// of pp=; nilfs-clean reaches that cleaner from its own jail (the Reclaimer of an aging); the
// unmount stops the cleaner and leaves nothing mounted. This host's kernel has no nilfs2: the
// test runs in the QEMU guest (vm.TestGuestConfined).
func TestNilfs2Jailed(t *testing.T) {
	needRoot(t)
	k, _ := Lookup("nilfs2")
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	if a := sys.Check(k); !a.Runs {
		t.Skipf("this machine cannot run nilfs2 (%s): vm.TestGuestConfined runs this test in the QEMU guest", a.Reason)
	}
	if err := jailAvailable(); err != nil {
		t.Fatalf("no jail as root: %v", err)
	}
	ctx, cancel := context.WithTimeout(WithWorkDir(context.Background(), t.TempDir()), 5*time.Minute)
	defer cancel()
	if a := sys.Check(k); a.Kernel == KernelModuleAvailable {
		LoadModule(ctx, nil, sys, k)
	}
	dev := attachLoop(t, 256<<20)
	// 1 MiB segments: with the default 8 MiB, mkfs.nilfs2 wants more than 128 MiB.
	if err := Mkfs(ctx, nil, k, dev, []string{"-B", "256"}); err != nil {
		t.Fatal(err)
	}
	dir := mountDir(t, k)
	if err := Mount(ctx, k, dev, dir, "pp=0"); err != nil {
		t.Fatal(err)
	}
	c := cleanerOf(dir)
	if c == nil || !c.p.Running() {
		t.Fatalf("no cleaner runs for %s after the mount", dir)
	}
	procs := cleanerProcesses(t)
	if len(procs) == 0 || !strings.Contains(procs[0], "-p 0 "+dev+" "+dir) {
		t.Fatalf("nilfs_cleanerd processes %q, want one with -p 0 %s %s; the cleaner's jail said: %s", procs, dev, dir, c.p.Output())
	}
	// The cleaner runs in a jail: its /dev holds the device and the harmless nodes only.
	if pid := strings.Fields(procs[0])[0]; pid != "" {
		ents, err := os.ReadDir("/proc/" + pid + "/root/dev")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !slices.Contains(names, filepath.Base(dev)) || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "loop") && n != filepath.Base(dev) }) || len(names) > 12 {
			t.Errorf("the cleaner's /dev holds %v", names)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "f"))
	out, err := runNilfsClean(ctx, nil, dev, dir, "-p", "0", "-m", "1")
	if err != nil {
		t.Errorf("nilfs-clean from its jail: %v: %s", err, out)
	} else {
		t.Logf("nilfs-clean from its jail: %s", strings.TrimSpace(string(out)))
	}
	if err := Unmount(ctx, k, dir); err != nil {
		t.Fatal(err)
	}
	if m, _ := mountinfo.MountedAt(dir); m {
		t.Errorf("%s still mounted", dir)
	}
	if c.p.Running() || len(cleanerProcesses(t)) > 0 {
		t.Errorf("the cleaner runs after the unmount: %v", cleanerProcesses(t))
	}
}

// cleanerProcesses lists "PID ARGS" of every nilfs_cleanerd running.
func cleanerProcesses(t *testing.T) []string {
	t.Helper()
	var out []string
	cmds, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmds {
		b, _ := os.ReadFile(p)
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "nilfs_cleanerd" {
			out = append(out, filepath.Base(filepath.Dir(p))+" "+strings.Join(args[1:], " "))
		}
	}
	return out
}
