package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/probe"
	"github.com/spf13/cobra"
)

// classFlags are fsbench probe --class's.
type classFlags struct {
	enabled bool
	area    string
	runtime time.Duration
}

func (c *classFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&c.enabled, "class", false, "measure the SD application class (A1, A2) under the specification's conditions: random 4 KiB writes and reads at queue depth 1 and 32 in a 256 MiB area written first, its sequential write; WRITES the area (needs --destroy)")
	fl.StringVar(&c.area, "class-area", "256M", "with --class: the measurement area at the start of the device")
	fl.DurationVar(&c.runtime, "class-runtime", 10*time.Second, "with --class: the length of each random test")
}

// runClass is fsbench probe --class --destroy DEVICE DEVICE: the conditions, the host's queue,
// the figures and the A1/A2 verdicts on stdout, class.json in --out.
func runClass(cmd *cobra.Command, stdio IO, dev string, f probeFlags) error {
	if strings.HasPrefix(dev, "ssh://") {
		return usagef("probe --class runs on the machine the card is in: run fsbench probe --class there")
	}
	area, err := bytesize.Parse(f.class.area)
	if err != nil || area < 1<<20 {
		return usagef("--class-area %q: give a size of at least 1M, such as 256M", f.class.area)
	}
	if f.class.runtime <= 0 {
		return usagef("--class-runtime must be positive, such as 10s")
	}
	if err := checkWritable(dev, f.destroy); err != nil {
		return err
	}
	opt := probe.ClassOptions{Area: area, Runtime: f.class.runtime}
	if !f.quiet {
		opt.Log = stdio.logf
	}
	r, err := probe.Class(cmd.Context(), dev, "/sys", opt)
	if err != nil {
		return fmt.Errorf("probe --class %s: %w", dev, err)
	}
	if err := probe.WriteClassSummary(stdio.Out, r); err != nil {
		return err
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join("fsbench-probe", time.Now().Format("20060102-150405"))
	}
	path, err := probe.WriteClassFile(dir, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "\n%s\n", path)
	return nil
}
