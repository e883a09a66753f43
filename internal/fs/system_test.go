package fs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// procFilesystems is /proc/filesystems as this machine's 6.18 kernel shows it, trimmed.
const procFilesystems = "nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\n\text3\n\text2\n\text4\n\tsquashfs\n" +
	"nodev\tfuse\n\txfs\n\terofs\n\tbtrfs\n"

func lookPathOnly(tools ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, t := range tools {
			if t == name {
				return "/usr/sbin/" + name, nil
			}
		}
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
}

func lookPathAll(name string) (string, error) { return "/usr/sbin/" + name, nil }

// writeFiles creates files (relative path -> contents) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	modules := filepath.Join(root, "lib/modules/6.18.44")
	writeFiles(t, root, map[string]string{
		"lib/modules/6.18.44/modules.dep": "kernel/fs/f2fs/f2fs.ko.xz: kernel/lib/lz4/lz4_compress.ko.xz\n" +
			"kernel/fs/nilfs2/nilfs2.ko.zst:\nkernel/fs/xfs/xfs.ko:\n",
		"lib/modules/6.18.44/modules.builtin": "kernel/fs/ext4/ext4.ko\nkernel/fs/erofs/erofs.ko\n",
		"sys/module/xfs/initstate":            "live\n",
		"sys/module/erofs/parameters/x":       "0\n",
	})
	sysModule := filepath.Join(root, "sys/module")
	base := System{
		LookPath:        lookPathAll,
		ProcFilesystems: procFilesystems,
		KernelRelease:   "6.18.44",
		ModulesDir:      modules,
		SysModuleDir:    sysModule,
	}
	tests := []struct {
		name   string
		sys    func(System) System
		kind   string
		want   Availability
		reason []string // fragments Reason must hold; Reason must be empty when nil
	}{
		{"built in", nil, "ext4",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.ext4", Kernel: "built-in"}, nil},
		{"ext2 served by ext4", nil, "ext2",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.ext2", Kernel: "built-in"}, nil},
		{"built in with parameters in sysfs", nil, "erofs",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.erofs", Kernel: "built-in"}, nil},
		{"loaded module", nil, "xfs",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.xfs", Kernel: "module loaded"}, nil},
		{"module available", nil, "f2fs",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.f2fs", Kernel: "module available"}, nil},
		{"compressed module available", nil, "nilfs2",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.nilfs2", Kernel: "module available"}, nil},
		{"tool missing", func(s System) System { s.LookPath = lookPathOnly("mkfs.ext4"); return s }, "f2fs",
			Availability{Kernel: "module available"},
			[]string{"mkfs.f2fs not found: install the Debian package f2fs-tools"}},
		{"neither built in nor module", nil, "vfat",
			Availability{ToolPath: "/usr/sbin/mkfs.vfat", Kernel: "missing"},
			[]string{"this kernel (6.18.44) has no vfat: not built in, and no module for it in " + modules}},
		{"no modules directory", func(s System) System { s.ModulesDir = filepath.Join(root, "nope"); return s }, "f2fs",
			Availability{ToolPath: "/usr/sbin/mkfs.f2fs", Kernel: "missing"},
			[]string{"this kernel (6.18.44) has no f2fs", "that directory does not exist"}},
		{"tool and kernel missing", func(s System) System { s.LookPath = lookPathOnly(); return s }, "vfat",
			Availability{Kernel: "missing"},
			[]string{"mkfs.vfat not found: install the Debian package dosfstools", "; this kernel (6.18.44) has no vfat"}},
		{"squashfs tool missing", func(s System) System { s.LookPath = lookPathOnly(); return s }, "squashfs",
			Availability{Kernel: "built-in"},
			[]string{"mksquashfs not found: install the Debian package squashfs-tools"}},
		{"no sysfs: modules.dep says loadable, so loaded", func(s System) System { s.SysModuleDir = ""; return s }, "xfs",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.xfs", Kernel: "module loaded"}, nil},
		{"no sysfs: modules.builtin says built in", func(s System) System { s.SysModuleDir = ""; return s }, "ext4",
			Availability{Runs: true, ToolPath: "/usr/sbin/mkfs.ext4", Kernel: "built-in"}, nil},
		{"no release known", func(s System) System { s.KernelRelease, s.ModulesDir = "", ""; return s }, "vfat",
			Availability{ToolPath: "/usr/sbin/mkfs.vfat", Kernel: "missing"},
			[]string{"this kernel has no vfat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			if tt.sys != nil {
				s = tt.sys(s)
			}
			got := s.Check(mustLookup(t, tt.kind))
			reason := got.Reason
			got.Reason = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
			if tt.reason == nil && reason != "" {
				t.Errorf("Reason = %q, want none", reason)
			}
			if !containsAll(reason, tt.reason...) {
				t.Errorf("Reason = %q, want it to hold %q", reason, tt.reason)
			}
		})
	}
}

// TestCheckHost checks this machine's answers against /proc/filesystems: a registered filesystem
// is built in or loaded; an unregistered one with no module tree (as here, where the kernel has
// no f2fs, nilfs2 or vfat and /lib/modules is absent) says why.
func TestCheckHost(t *testing.T) {
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	if sys.KernelRelease == "" || !strings.HasSuffix(sys.ModulesDir, sys.KernelRelease) {
		t.Errorf("release %q, modules dir %q", sys.KernelRelease, sys.ModulesDir)
	}
	for _, k := range Kinds() {
		a := sys.Check(k)
		t.Logf("%-8s %+v", k.Name, a)
		registered := hasFilesystem(sys.ProcFilesystems, k.Name)
		switch {
		case k.NotMainline != "":
			if a.Runs || a.Kernel != KernelNotMainline || a.Reason != k.NotMainline {
				t.Errorf("%s is not in mainline, yet %+v", k.Name, a)
			}
		case registered && a.Kernel != KernelBuiltIn && a.Kernel != KernelModuleLoaded:
			t.Errorf("%s is in /proc/filesystems but Kernel = %q", k.Name, a.Kernel)
		case !registered && !dirExists(sys.ModulesDir):
			if a.Runs || a.Kernel != KernelMissing || !containsAll(a.Reason, "has no "+k.Name, sys.ModulesDir, "does not exist") {
				t.Errorf("%s: not in the kernel and no modules, yet %+v", k.Name, a)
			}
		}
		if _, err := exec.LookPath(k.Tool); err == nil && a.ToolPath == "" {
			t.Errorf("%s: %s is in PATH but ToolPath is empty", k.Name, k.Tool)
		}
	}
}

func TestHasFilesystem(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{{"ext4", true}, {"tmpfs", true}, {"fuse", true}, {"fuseblk", false}, {"ext", false}, {"nodev", false}, {"f2fs", false}} {
		if got := hasFilesystem(procFilesystems, tt.name); got != tt.want {
			t.Errorf("hasFilesystem(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// fakeKernel is a System whose /proc/filesystems and /sys/module are files a fake modprobe can
// change.
func fakeKernel(t *testing.T, registered string) (System, string) {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"proc/filesystems":                  registered,
		"lib/modules/6.1.0/modules.dep":     "kernel/fs/f2fs/f2fs.ko.xz:\n",
		"sys/module/btrfs/initstate":        "live\n",
		"sys/module/btrfs/coresize":         "1855488\n",
		"sys/module/erofs/parameters/dummy": "",
	})
	return System{
		LookPath:            lookPathAll,
		ProcFilesystems:     registered,
		KernelRelease:       "6.1.0",
		ModulesDir:          filepath.Join(root, "lib/modules/6.1.0"),
		SysModuleDir:        filepath.Join(root, "sys/module"),
		ProcFilesystemsPath: filepath.Join(root, "proc/filesystems"),
	}, root
}

func TestLoadModule(t *testing.T) {
	ctx := context.Background()
	const modprobeTakes = 5 * time.Millisecond

	t.Run("built in: no modprobe, no time", func(t *testing.T) {
		s, _ := fakeKernel(t, "\text4\n\text3\n\terofs\n")
		f := &fakeRunner{}
		for _, name := range []string{"ext4", "ext3", "erofs"} {
			k := mustLookup(t, name)
			got := LoadModule(ctx, f.run, s, k)
			want := ModuleStatus{State: "built-in", Module: k.Module}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
		if len(f.calls) != 0 {
			t.Errorf("ran %v for built-in filesystems", f.calls)
		}
	})

	t.Run("already loaded: size, no time", func(t *testing.T) {
		s, _ := fakeKernel(t, "\tbtrfs\n")
		f := &fakeRunner{}
		got := LoadModule(ctx, f.run, s, mustLookup(t, "btrfs"))
		want := ModuleStatus{State: "already loaded", Module: "btrfs", SizeBytes: 1855488}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if len(f.calls) != 0 {
			t.Errorf("ran %v for a loaded module", f.calls)
		}
	})

	t.Run("stale snapshot: the file decides", func(t *testing.T) {
		s, root := fakeKernel(t, "\text4\n")
		writeFiles(t, root, map[string]string{"proc/filesystems": "\text4\n\tbtrfs\n"})
		f := &fakeRunner{}
		got := LoadModule(ctx, f.run, s, mustLookup(t, "btrfs"))
		if got.State != "already loaded" || got.Duration != 0 || len(f.calls) != 0 {
			t.Errorf("got %+v after %v; want already loaded without modprobe", got, f.calls)
		}
	})

	t.Run("loaded by modprobe: timed, size", func(t *testing.T) {
		s, root := fakeKernel(t, "\text4\n")
		f := &fakeRunner{hook: func(name string, args []string) {
			time.Sleep(modprobeTakes)
			writeFiles(t, root, map[string]string{
				"proc/filesystems":          "\text4\n\tf2fs\n",
				"sys/module/f2fs/initstate": "live\n",
				"sys/module/f2fs/coresize":  "438272\n",
			})
		}}
		got := LoadModule(ctx, f.run, s, mustLookup(t, "f2fs"))
		if diff := cmp.Diff([]call{{"modprobe", []string{"f2fs"}}}, f.calls, cmp.AllowUnexported(call{})); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		if got.State != "loaded" || got.Module != "f2fs" || got.SizeBytes != 438272 || got.Error != "" {
			t.Errorf("got %+v", got)
		}
		if got.Duration < modprobeTakes || got.Duration > time.Minute {
			t.Errorf("Duration = %v, want the time modprobe took (>= %v)", got.Duration, modprobeTakes)
		}
	})

	t.Run("modprobe fails", func(t *testing.T) {
		s, _ := fakeKernel(t, "\text4\n")
		s.ModulesDir = filepath.Join(t.TempDir(), "absent")
		f := &fakeRunner{
			out: []byte("modprobe: FATAL: Module nilfs2 not found in directory /lib/modules/6.1.0\n"),
			err: errors.New("exit status 1"),
		}
		got := LoadModule(ctx, f.run, s, mustLookup(t, "nilfs2"))
		if got.State != "unavailable" || got.Duration != 0 {
			t.Errorf("got %+v", got)
		}
		if !containsAll(got.Error, "modprobe nilfs2", "exit status 1", "Module nilfs2 not found", "has no nilfs2") {
			t.Errorf("Error = %q", got.Error)
		}
	})

	t.Run("modprobe succeeds, still not registered", func(t *testing.T) {
		s, _ := fakeKernel(t, "\text4\n")
		f := &fakeRunner{}
		got := LoadModule(ctx, f.run, s, mustLookup(t, "vfat"))
		if got.State != "unavailable" || got.Duration != 0 || !strings.Contains(got.Error, "still has no vfat") {
			t.Errorf("got %+v", got)
		}
	})
}

// TestLoadModuleHost asks this machine about the filesystems its kernel already has; it never
// runs modprobe for real (that would change the host).
func TestLoadModuleHost(t *testing.T) {
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRunner{err: errors.New("modprobe must not run")}
	for _, k := range Kinds() {
		if !hasFilesystem(sys.ProcFilesystems, k.Name) {
			continue
		}
		st := LoadModule(context.Background(), f.run, sys, k)
		if (st.State != "built-in" && st.State != "already loaded") || st.Duration != 0 || st.Error != "" {
			t.Errorf("%s: %+v", k.Name, st)
		}
		if st.State == "built-in" && st.SizeBytes != 0 {
			t.Errorf("%s: built in, yet a module size %d", k.Name, st.SizeBytes)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("ran %v", f.calls)
	}
}
