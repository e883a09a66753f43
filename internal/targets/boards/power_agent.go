package boards

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/powercut"
	pcsuite "github.com/fsbench/fsbench/internal/suites/powercut"
	"github.com/fsbench/fsbench/internal/targets/device"
)

// The board's side of a live power-cut campaign: `fsbench powercut-agent` (hidden), started
// by the host over SSH for each step, its job as one JSON line on standard input.

// Agent actions.
const (
	AgentMkfs     = "mkfs"     // make the variant's filesystem on the device
	AgentWorkload = "workload" // mount it, empty the workload's directory, run the workload streaming its promises
	AgentCheck    = "check"    // after the power came back: mount, verify, check, repair (pcsuite.CutChecker)
)

// AgentJob is what the host asks of the board's fsbench for one step of a live cut.
type AgentJob struct {
	Action string `json:"action"`
	// Device is the device under test, named twice on the host (--target .../dev/X and
	// --destroy /dev/X); every action checks it again here (not mounted, not the system's).
	Device string        `json:"device"`
	Dir    string        `json:"dir"` // the board's directory for the mount point and scratch space
	FS     string        `json:"fs"`
	Mkfs   []string      `json:"mkfs_args,omitempty"`
	Mount  string        `json:"mount_options,omitempty"`
	Spec   powercut.Spec `json:"spec,omitzero"`
	// Manifest and Pos: what the host heard promised, and its position at the cut (check).
	Manifest *powercut.Manifest `json:"manifest,omitempty"`
	Pos      uint64             `json:"pos,omitempty"`
}

// workDir is the name of the workload's directory in the filesystem (pcsuite.CutChecker reads it).
const workDir = "powercut"

// RunAgent carries out one job read from in (its first line), writing its answer (JSON) or its
// stream of events to out; for a workload, in then carries the host's go lines.
func RunAgent(ctx context.Context, in io.Reader, out io.Writer) error {
	br := bufio.NewReader(in)
	line, err := br.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return fmt.Errorf("reading the job: %w", err)
	}
	var job AgentJob
	if err := json.Unmarshal(line, &job); err != nil {
		return fmt.Errorf("the job: %w", err)
	}
	k, ok := fs.Lookup(job.FS)
	if !ok {
		return &plan.InputError{Err: fmt.Errorf("unknown filesystem %q", job.FS)}
	}
	if _, err := device.CheckDevice(job.Device, job.Device); err != nil {
		return &plan.InputError{Err: err}
	}
	mp := filepath.Join(job.Dir, "mnt")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		return err
	}
	switch job.Action {
	case AgentMkfs:
		if err := fs.Mkfs(ctx, fs.DefaultRunner, k, job.Device, job.Mkfs); err != nil {
			return err
		}
		_, err := fmt.Fprintln(out, "{}")
		return err
	case AgentWorkload:
		return agentWorkload(ctx, job, k, mp, br, out)
	case AgentCheck:
		work := filepath.Join(job.Dir, "scratch")
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		ck := pcsuite.CutChecker{Kind: k, MountOptions: job.Mount, Mountpoint: mp, WorkDir: work, Run: fs.DefaultRunner}
		c, err := ck.CheckDevice(ctx, job.Device, job.Manifest, job.Pos)
		if err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(c)
	}
	return &plan.InputError{Err: fmt.Errorf("unknown action %q", job.Action)}
}

// agentWorkload mounts the filesystem, empties the workload's directory (what the last cut left
// there was checked already) durably, and runs the workload with its promises streamed to out
// and the host's go read from in. Once it has finished it waits, mounted, for the power to go:
// the end of in (the host gave up) unmounts and returns.
func agentWorkload(ctx context.Context, job AgentJob, k fs.Kind, mp string, in *bufio.Reader, out io.Writer) error {
	if err := fs.Mount(ctx, k, job.Device, mp, job.Mount); err != nil {
		return err
	}
	unmount := func() error {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		return fs.Unmount(uctx, k, mp)
	}
	dir := filepath.Join(mp, workDir)
	if err := errors.Join(os.RemoveAll(dir), os.Mkdir(dir, 0o755)); err != nil {
		return errors.Join(fmt.Errorf("emptying the workload's directory: %w", err), unmount())
	}
	if err := syncfsDir(dir); err != nil {
		return errors.Join(err, unmount())
	}
	spec := job.Spec
	if spec.LargeBytes == 0 {
		// As on the simulated card: the large writes stay a small share of the filesystem.
		var sfs unix.Statfs_t
		if err := unix.Statfs(dir, &sfs); err == nil {
			spec.LargeBytes = int(min(4<<20, max(64<<10, sfs.Blocks*uint64(sfs.Bsize)/200)))
		}
	}
	obs := &powercut.StreamObserver{W: out, R: in}
	if err := obs.Send(powercut.Event{E: powercut.EventReady, Note: fmt.Sprintf("%s mounted on %s (%s)", job.Device, mp, job.Mount)}); err != nil {
		return errors.Join(err, unmount())
	}
	if _, err := (powercut.Workload{Spec: spec, Observer: obs}).Run(ctx, dir); err != nil {
		return errors.Join(fmt.Errorf("the workload: %w", err), unmount())
	}
	if err := obs.Send(powercut.Event{E: powercut.EventEnd}); err != nil {
		return errors.Join(err, unmount())
	}
	// Mounted, idle, until the power goes; the host ending the session is the only other way out.
	io.Copy(io.Discard, in)
	return unmount()
}

func syncfsDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
