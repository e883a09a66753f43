package fs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func lookupSpec(k Kind) (spec, error) {
	s, ok := specs[k.Name]
	if !ok {
		return spec{}, fmt.Errorf("unknown filesystem %q: fsbench knows %s", k.Name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// mkfsArgs returns the arguments Mkfs passes to k.Tool: the flags that make it non-interactive,
// then args, then dev.
func mkfsArgs(k Kind, dev string, args []string) ([]string, error) {
	if k.ReadOnly {
		return nil, fmt.Errorf("%s is read-only: it has no mkfs, build an image with BuildImage", k.Name)
	}
	if k.Flash {
		return nil, fmt.Errorf("%s lives on raw flash, not on a block device: run it with --suite free-electrons", k.Name)
	}
	s, err := lookupSpec(k)
	if err != nil {
		return nil, err
	}
	argv := make([]string, 0, len(s.mkfsFlags)+len(args)+1)
	argv = append(argv, s.mkfsFlags...)
	argv = append(argv, args...)
	return append(argv, dev), nil
}

// Mkfs makes a filesystem of kind k on dev with the variant's extra args, adding the flags that
// make it non-interactive (mkfs.ext4 -F -q, mkfs.xfs -f -q, mkfs.btrfs -f -q, mkfs.f2fs -f -q,
// mkfs.nilfs2 -f -q, mkfs.vfat -I). The tool runs confined: dev is the only device it can open,
// a private directory the only place it can write. Errors carry the command line and the
// tool's output. A nil run means DefaultRunner.
func Mkfs(ctx context.Context, run Runner, k Kind, dev string, args []string) error {
	argv, err := mkfsArgs(k, dev, args)
	if err != nil {
		return err
	}
	if err := checkDevice(ctx, dev); err != nil {
		return fmt.Errorf("%s: %w", commandLine(k.Tool, argv), err)
	}
	ctx = withJail(ctx, jail{devices: []string{dev}, userWords: len(args) > 0})
	if out, err := runner(run)(ctx, k.Tool, argv...); err != nil {
		return cmdError(ctx, k.Tool, argv, err, out)
	}
	return nil
}

// buildImageArgs returns the arguments BuildImage passes to k.Tool.
func buildImageArgs(k Kind, src, img string, args []string) ([]string, error) {
	var argv []string
	switch k.Name {
	case "squashfs":
		// -noappend: by default mksquashfs appends to an existing image, which would measure
		// a different thing on a rerun. -no-progress: the bar is noise in a captured output.
		argv = append([]string{src, img, "-noappend", "-no-progress"}, args...)
	case "erofs":
		// mkfs.erofs takes its options first and always overwrites the image.
		argv = append(append(argv, args...), img, src)
	default:
		if !k.ReadOnly {
			return nil, fmt.Errorf("%s is not a read-only image filesystem: make it with Mkfs", k.Name)
		}
		return nil, fmt.Errorf("no image builder known for read-only filesystem %q", k.Name)
	}
	return argv, nil
}

// BuildImage builds a read-only image of the directory src into the file img
// (squashfs: mksquashfs SRC IMG -noappend -no-progress ARGS; erofs: mkfs.erofs ARGS IMG SRC).
// The builder runs confined: img is the only file it can write besides its private directory,
// and it can open no device. A nil run means DefaultRunner.
func BuildImage(ctx context.Context, run Runner, k Kind, src, img string, args []string) error {
	// Absolute: the builder's working directory is its private one, not this process's.
	src, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	if img, err = filepath.Abs(img); err != nil {
		return err
	}
	argv, err := buildImageArgs(k, src, img, args)
	if err != nil {
		return err
	}
	// Both tools take a missing source in their stride in odd ways (mksquashfs treats a
	// missing SRC as a file list error); say it plainly first.
	if fi, err := os.Stat(src); err != nil {
		return fmt.Errorf("build %s image: source: %w", k.Name, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("build %s image: source %s is not a directory", k.Name, src)
	}
	ctx = withJail(ctx, jail{read: []string{src}, write: []string{img}, userWords: len(args) > 0})
	if out, err := runner(run)(ctx, k.Tool, argv...); err != nil {
		return cmdError(ctx, k.Tool, argv, err, out)
	}
	return nil
}

// BuildFlashImage runs the image builder of a raw-flash filesystem (mkfs.jffs2, mkfs.ubifs) with
// args, which read the directory src and write the file img (package nand makes them, with the
// chip's geometry); userWords says that args hold a variant's own words. The builder runs confined
// as BuildImage's do: img is the only file it can write besides its private directory, it can open
// no device, and where no jail can be made a variant's own words are refused. A nil run means
// DefaultRunner.
func BuildFlashImage(ctx context.Context, run Runner, k Kind, src, img string, args []string, userWords bool) error {
	if !k.Flash {
		return fmt.Errorf("%s is not a raw-flash filesystem: make it with Mkfs or BuildImage", k.Name)
	}
	if !filepath.IsAbs(src) || !filepath.IsAbs(img) {
		return fmt.Errorf("build %s image: give the source (%s) and the image (%s) as absolute paths: the builder runs in a directory of its own", k.Name, src, img)
	}
	ctx = withJail(ctx, jail{read: []string{src}, write: []string{img}, userWords: userWords})
	if out, err := runner(run)(ctx, k.Tool, args...); err != nil {
		return cmdError(ctx, k.Tool, args, err, out)
	}
	return nil
}

// Confined returns ctx with which DefaultRunner runs a program in a jail whose /dev holds only
// devices, reading read besides the system's directories: for the programs fsbench points at a
// device that are neither mkfs, fsck nor an image builder (the MTD and UBI tools of package
// nand). No user's word reaches them: where no jail can be made, they run as they are.
func Confined(ctx context.Context, devices, read []string) context.Context {
	return withJail(ctx, jail{devices: devices, read: read})
}

// ToolVersion runs the tool's version option and returns one clean line, e.g.
// "mke2fs 1.47.0 (5-Feb-2023)". A nil run means DefaultRunner.
func ToolVersion(ctx context.Context, run Runner, k Kind) (string, error) {
	s, err := lookupSpec(k)
	if err != nil {
		return "", err
	}
	out, runErr := runner(run)(ctx, k.Tool, s.versionArgs...)
	// The exit status is not trusted either way: mkfs.erofs 1.5 has no version option and
	// exits 1 after printing its version, and a zero exit with no version line is no answer.
	if v, ok := parseVersion(s, out); ok {
		return v, nil
	}
	if runErr != nil {
		return "", cmdError(ctx, k.Tool, s.versionArgs, runErr, out)
	}
	return "", cmdError(ctx, k.Tool, s.versionArgs, fmt.Errorf("no version line in the output"), out)
}

// parseVersion returns the first line of out that s.versionLine matches, trimmed.
func parseVersion(s spec, out []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if s.versionLine.MatchString(line) {
			return line, true
		}
	}
	return "", false
}
