package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/capacity"
)

// capacityFlags are fsbench probe --capacity's.
type capacityFlags struct {
	enabled  bool
	noReset  bool
	maxCache string
	undoDir  string
}

func (c *capacityFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&c.enabled, "capacity", false, "check that the card holds what it announces (counterfeit cards do not): on a card the host cannot reset (every real one) it writes past any write cache of up to --max-cache (1 GiB of a genuine card's own data written back, an undo log as large, minutes), saves and puts back its own blocks; it says what it will cost before it writes (exit 0 genuine, 4 counterfeit, 5 damaged, 6 not restored)")
	fl.BoolVar(&c.noReset, "no-reset", false, "with --capacity: never reset the card, even where the host can (write past its cache instead)")
	fl.StringVar(&c.maxCache, "max-cache", "", "with --capacity and no reset: the largest write cache to write past (default 1G, at most half the card)")
	fl.StringVar(&c.undoDir, "undo-dir", capacity.DefaultUndoDir, "with --capacity: where the undo log of the overwritten blocks is kept until they are put back")
}

// runCapacity is fsbench probe --capacity DEVICE: the verdict and its explanation on stdout,
// capacity.json in --out when given, and the verdict's exit code.
func runCapacity(cmd *cobra.Command, stdio IO, dev string, f probeFlags) error {
	if strings.HasPrefix(dev, "ssh://") {
		return usagef("probe --capacity runs on the machine the card is in: run fsbench probe --capacity there")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("fsbench probe --capacity needs root: it opens %s for direct I/O and writes to it", dev)
	}
	opt := capacity.Options{UndoDir: f.capacity.undoDir, NoReset: f.capacity.noReset,
		Announce: func(s string) { stdio.logf("%s", s) }}
	if f.destroy != "" {
		// The card's data is the user's to lose: nothing is saved, nothing put back, and no undo
		// log is needed (a board whose root filesystem is in RAM has no room for one).
		if err := checkWritable(dev, f.destroy); err != nil {
			return err
		}
		opt.NoUndo = true
	}
	if f.capacity.maxCache != "" {
		v, err := bytesize.Parse(f.capacity.maxCache)
		if err != nil {
			return usagef("--max-cache: %v", err)
		}
		opt.MaxCache = v
	}
	if !f.quiet {
		opt.Log = stdio.logf
	}
	t, err := capacity.OpenTarget(cmd.Context(), dev)
	if err != nil {
		return err
	}
	defer t.Close()
	r, err := capacity.Probe(cmd.Context(), t, opt)
	if r != nil {
		if xerr := capacity.Explain(stdio.Out, r); xerr != nil {
			return xerr
		}
		if f.out != "" {
			if werr := writeJSONFile(filepath.Join(f.out, "capacity.json"), r); werr != nil {
				return werr
			}
		}
	}
	if err != nil {
		// A card that could not be put back carries exit 6 in err (capacity.VerdictError).
		return err
	}
	if r.ExitCode() != capacity.ExitGenuine {
		return capacity.VerdictError{R: r}
	}
	return nil
}

// writeJSONFile writes v as indented JSON, creating the directory; through a temporary file
// renamed over path, so that a script never reads half a verdict.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
