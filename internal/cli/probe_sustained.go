package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/probe"
)

// sustainedFlags are fsbench probe --sustained's.
type sustainedFlags struct {
	enabled   bool
	bytes     string
	idle      time.Duration
	cardState string
}

func (s *sustainedFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&s.enabled, "sustained", false, "write the whole card (or --bytes) in 1 MiB direct writes and find its burst rate, the cache it writes into, the rate after it, and what comes back after --idle: DESTROYS ALL DATA on the device (needs --destroy)")
	fl.StringVar(&s.bytes, "bytes", "", "with --sustained: write only this much from the start of the device (default: all of it)")
	fl.DurationVar(&s.idle, "idle", 30*time.Second, "with --sustained: how long the card is left alone before the recovery pass (0: no recovery pass)")
	fl.StringVar(&s.cardState, "card-state", probe.CardFresh, "with --sustained: the card's state before the test: fresh (discarded whole first) or used (written whole once first, nothing discarded)")
}

// runSustained is fsbench probe --sustained --destroy DEVICE DEVICE: the summary on stdout,
// sustained.json, sustained.txt and sustained.svg in --out.
func runSustained(cmd *cobra.Command, stdio IO, dev string, f probeFlags) error {
	s := f.sustained
	if strings.HasPrefix(dev, "ssh://") {
		return usagef("probe --sustained runs on the machine the card is in: run fsbench probe --sustained there")
	}
	if f.write || f.capacity.enabled {
		return usagef("--sustained is a test of its own: give it without --write or --capacity")
	}
	opt := probe.SustainedOptions{CardState: s.cardState, Idle: s.idle}
	if s.idle == 0 {
		opt.Idle = -1
	}
	switch s.cardState {
	case probe.CardFresh, probe.CardUsed:
	default:
		return usagef("--card-state %q: use %s or %s", s.cardState, probe.CardFresh, probe.CardUsed)
	}
	if s.bytes != "" {
		n, err := bytesize.Parse(s.bytes)
		if err != nil {
			return usagef("--bytes: %v", err)
		}
		opt.Bytes = n
	}
	if err := checkWritable(dev, f.destroy); err != nil {
		if f.destroy == "" {
			return usagef("--sustained overwrites all of %s: confirm with --destroy %s", dev, dev)
		}
		return err
	}
	if !f.quiet {
		opt.Log = stdio.logf
	}
	d, closeDev, err := probe.OpenDevice(dev, true)
	if err != nil {
		return err
	}
	defer closeDev()
	if !d.Direct() {
		return fmt.Errorf("probe --sustained %s: the file's filesystem refuses O_DIRECT: the rates would be the page cache's", dev)
	}
	r, err := probe.Sustained(cmd.Context(), d, opt)
	if err != nil {
		return fmt.Errorf("probe --sustained %s: %w", dev, err)
	}
	r.Device = dev
	dir := f.out
	if dir == "" {
		dir = filepath.Join("fsbench-probe", time.Now().Format("20060102-150405"))
	}
	paths, err := probe.WriteSustainedFiles(dir, r)
	if err != nil {
		return err
	}
	if err := probe.WriteSustainedSummary(stdio.Out, r); err != nil {
		return err
	}
	fmt.Fprintln(stdio.Out)
	for _, p := range paths {
		fmt.Fprintln(stdio.Out, p)
	}
	return nil
}
