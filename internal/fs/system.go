package fs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// System is what availability depends on; the real one reads the machine, tests use fakes.
type System struct {
	LookPath        func(string) (string, error) // nil means exec.LookPath plus the sbin directories
	ProcFilesystems string                       // contents of /proc/filesystems
	KernelRelease   string                       // uname -r
	ModulesDir      string                       // /lib/modules/<release>, may not exist

	// SysModuleDir is /sys/module. A module that was loaded has <SysModuleDir>/<m>/initstate;
	// a built-in one never has (built-ins with parameters still get a directory, without
	// initstate: on this kernel /sys/module/erofs holds only "parameters"). Empty means
	// unknown: then modules.builtin and modules.dep in ModulesDir decide.
	SysModuleDir string
	// ProcFilesystemsPath is /proc/filesystems, read again by LoadModule (the ProcFilesystems
	// snapshot goes stale as soon as anything loads a module). Empty: LoadModule uses the snapshot.
	ProcFilesystemsPath string
}

// Kernel support states reported in Availability.Kernel.
const (
	KernelBuiltIn         = "built-in"
	KernelModuleLoaded    = "module loaded"
	KernelModuleAvailable = "module available"
	KernelMissing         = "missing"
	// KernelNotMainline: no stock kernel has it (Kind.NotMainline says why); no guest helps.
	KernelNotMainline = "not in mainline"
)

// Module states reported in ModuleStatus.State.
const (
	ModuleBuiltIn       = "built-in"
	ModuleAlreadyLoaded = "already loaded"
	ModuleLoaded        = "loaded"
	ModuleUnavailable   = "unavailable"
)

// sbinDirs hold every mkfs tool on Debian; they are not in an ordinary user's PATH, and fsbench
// may be started by one (to list what the machine runs, without root).
var sbinDirs = []string{"/usr/sbin", "/sbin", "/usr/local/sbin"}

func hostLookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil || strings.Contains(name, "/") {
		return p, err
	}
	for _, dir := range sbinDirs {
		cand := filepath.Join(dir, name)
		if fi, statErr := os.Stat(cand); statErr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", err
}

// HostSystem reads this machine: /proc/filesystems, the kernel release, /lib/modules/<release>,
// /sys/module, and PATH (with the sbin directories added).
func HostSystem() (System, error) {
	const procFS = "/proc/filesystems"
	b, err := os.ReadFile(procFS)
	if err != nil {
		return System{}, fmt.Errorf("read the kernel's filesystem list: %w (is /proc mounted?)", err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return System{}, fmt.Errorf("uname: %w", err)
	}
	rel := unix.ByteSliceToString(uts.Release[:])
	return System{
		LookPath:            hostLookPath,
		ProcFilesystems:     string(b),
		KernelRelease:       rel,
		ModulesDir:          filepath.Join("/lib/modules", rel),
		SysModuleDir:        "/sys/module",
		ProcFilesystemsPath: procFS,
	}, nil
}

// Availability says whether this machine can run a kind, and if not, why and what to do.
type Availability struct {
	Runs     bool   `json:"runs"`
	Reason   string `json:"reason,omitempty"` // why not, saying what to do
	ToolPath string `json:"tool_path,omitempty"`
	Kernel   string `json:"kernel"` // "built-in", "module loaded", "module available", "missing"
}

// Check says whether k runs here: its tool must be installed and the kernel must have the
// filesystem built in, loaded, or as a module LoadModule can load. It reads the ProcFilesystems
// snapshot, and ModulesDir and SysModuleDir on disk.
func (s System) Check(k Kind) Availability {
	var a Availability
	if k.NotMainline != "" {
		return Availability{Kernel: KernelNotMainline, Reason: k.NotMainline}
	}
	var reasons []string
	lookPath := s.LookPath
	if lookPath == nil {
		lookPath = hostLookPath
	}
	if p, err := lookPath(k.Tool); err != nil {
		reasons = append(reasons, fmt.Sprintf("%s not found: install the Debian package %s", k.Tool, k.Package))
	} else {
		a.ToolPath = p
	}
	var why string
	a.Kernel, why = s.kernelState(k, s.ProcFilesystems)
	if a.Kernel == KernelMissing {
		reasons = append(reasons, why)
	}
	a.Runs = len(reasons) == 0
	a.Reason = strings.Join(reasons, "; ")
	return a
}

// kernelState classifies the kernel's support for k given the contents of /proc/filesystems;
// when it is missing, why says so in words.
func (s System) kernelState(k Kind, procFilesystems string) (state, why string) {
	if hasFilesystem(procFilesystems, k.Name) {
		if s.moduleLoaded(k.Module) {
			return KernelModuleLoaded, ""
		}
		return KernelBuiltIn, ""
	}
	if k.Module != "" && s.moduleListed("modules.dep", k.Module) {
		return KernelModuleAvailable, ""
	}
	kernel := "this kernel"
	if s.KernelRelease != "" {
		kernel = fmt.Sprintf("this kernel (%s)", s.KernelRelease)
	}
	switch {
	case s.ModulesDir == "":
		why = fmt.Sprintf("%s has no %s: not built in, and no module directory to look in", kernel, k.Name)
	case !dirExists(s.ModulesDir):
		why = fmt.Sprintf("%s has no %s: not built in, and no module for it in %s (that directory does not exist)",
			kernel, k.Name, s.ModulesDir)
	default:
		why = fmt.Sprintf("%s has no %s: not built in, and no module for it in %s", kernel, k.Name, s.ModulesDir)
	}
	return KernelMissing, why
}

// hasFilesystem reports whether /proc/filesystems contents list name. Each line is an optional
// "nodev" flag, a tab, and the name.
func hasFilesystem(procFilesystems, name string) bool {
	for _, line := range strings.Split(procFilesystems, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[len(f)-1] == name {
			return true
		}
	}
	return false
}

// normModule spells a module name as the kernel does in /sys/module: modprobe treats '-' and
// '_' as the same, and file names in modules.dep may use either.
func normModule(m string) string {
	return strings.ReplaceAll(m, "-", "_")
}

// moduleLoaded reports whether module m is a loadable module that is loaded now (as opposed to
// built in).
func (s System) moduleLoaded(m string) bool {
	if m == "" {
		return false
	}
	if s.SysModuleDir != "" {
		_, err := os.Stat(filepath.Join(s.SysModuleDir, normModule(m), "initstate"))
		return err == nil
	}
	// Without sysfs: a module the build lists as loadable (and not as built-in) that serves a
	// registered filesystem must have been loaded.
	return !s.moduleListed("modules.builtin", m) && s.moduleListed("modules.dep", m)
}

// moduleListed reports whether the file ModulesDir/list (modules.dep or modules.builtin) names
// module m. Lines start with the module's path, "kernel/fs/f2fs/f2fs.ko.xz" (modules.dep adds
// ": deps"), compressed or not.
func (s System) moduleListed(list, m string) bool {
	if s.ModulesDir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(s.ModulesDir, list))
	if err != nil {
		return false
	}
	want := normModule(m)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		path, _, _ := strings.Cut(sc.Text(), ":")
		base := filepath.Base(strings.TrimSpace(path))
		name, _, ok := strings.Cut(base, ".ko")
		if ok && normModule(name) == want {
			return true
		}
	}
	return false
}

func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// ModuleStatus is what LoadModule found or did.
type ModuleStatus struct {
	State     string        `json:"state"` // "built-in", "already loaded", "loaded", "unavailable"
	Module    string        `json:"module"`
	Duration  time.Duration `json:"duration_ns,omitempty"` // modprobe time, only when State == "loaded"
	SizeBytes uint64        `json:"size_bytes,omitempty"`  // /sys/module/<m>/coresize when a module
	Error     string        `json:"error,omitempty"`
}

// LoadModule makes the kernel support k: if k.Name is in /proc/filesystems already it reports
// built-in or already loaded (never a fake time); otherwise it times `modprobe <module>` and
// checks /proc/filesystems again. A nil run means DefaultRunner.
func LoadModule(ctx context.Context, run Runner, s System, k Kind) ModuleStatus {
	st := ModuleStatus{Module: k.Module}
	// Read /proc/filesystems afresh: an earlier variant (ext2 after ext4, or a second f2fs
	// variant) may have loaded the module since the snapshot, and timing a modprobe of a
	// loaded module would record a fake load time.
	procFS, err := s.readProcFilesystems()
	if err != nil {
		st.State, st.Error = ModuleUnavailable, err.Error()
		return st
	}
	if hasFilesystem(procFS, k.Name) {
		if s.moduleLoaded(k.Module) {
			st.State = ModuleAlreadyLoaded
			st.SizeBytes = s.moduleSize(k.Module)
		} else {
			st.State = ModuleBuiltIn
		}
		return st
	}
	if k.Module == "" {
		st.State, st.Error = ModuleUnavailable, fmt.Sprintf("no kernel module is known to provide %s", k.Name)
		return st
	}
	start := time.Now()
	out, err := runner(run)(ctx, "modprobe", k.Module)
	took := time.Since(start)
	if err != nil {
		_, why := s.kernelState(k, procFS)
		e := cmdError(ctx, "modprobe", []string{k.Module}, err, out)
		if why != "" {
			e = fmt.Errorf("%w (%s)", e, why)
		}
		st.State, st.Error = ModuleUnavailable, e.Error()
		return st
	}
	if procFS, err = s.readProcFilesystems(); err != nil {
		st.State, st.Error = ModuleUnavailable, err.Error()
		return st
	}
	if !hasFilesystem(procFS, k.Name) {
		st.State = ModuleUnavailable
		st.Error = fmt.Sprintf("modprobe %s succeeded but the kernel still has no %s in /proc/filesystems (is %s the module that provides it?)",
			k.Module, k.Name, k.Module)
		return st
	}
	st.State, st.Duration = ModuleLoaded, took
	st.SizeBytes = s.moduleSize(k.Module)
	return st
}

func (s System) readProcFilesystems() (string, error) {
	if s.ProcFilesystemsPath == "" {
		return s.ProcFilesystems, nil
	}
	b, err := os.ReadFile(s.ProcFilesystemsPath)
	if err != nil {
		return "", fmt.Errorf("read the kernel's filesystem list: %w", err)
	}
	return string(b), nil
}

// moduleSize reads /sys/module/<m>/coresize, the bytes of kernel memory the module's code and
// data take; 0 when unknown (built in, or no sysfs).
func (s System) moduleSize(m string) uint64 {
	if s.SysModuleDir == "" || m == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(s.SysModuleDir, normModule(m), "coresize"))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// HasModule reports whether the kernel has module m: built in, loaded, or loadable from
// ModulesDir. It is for drivers that are not filesystems (nandsim, ubi), which
// /proc/filesystems does not list.
func (s System) HasModule(m string) bool {
	if s.moduleListed("modules.builtin", m) || s.moduleListed("modules.dep", m) {
		return true
	}
	if s.SysModuleDir != "" {
		_, err := os.Stat(filepath.Join(s.SysModuleDir, normModule(m)))
		return err == nil
	}
	return false
}
