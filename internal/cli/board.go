package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/bytesize"
)

// boardCmdFlags are the flags of fsbench board.
type boardCmdFlags struct {
	arch, name, cache, state, card, cardSize string
	port, mem, smp                           int
	timeout                                  time.Duration
	rebuild                                  bool
}

// newBoardCmd is fsbench board up|down|status: emulated ARM boards to try the remote path on.
func newBoardCmd(stdio IO) *cobra.Command {
	var f boardCmdFlags
	cmd := &cobra.Command{
		Use:   "board",
		Short: "Boot an emulated ARM board (QEMU) to run fsbench on over SSH, as on a real one",
		Long: `board up builds an emulated arm64 (or armv7) board from Debian's arm packages (kernel, busybox,
dropbear, the mkfs tools: downloaded with a private apt state into ` + board.DefaultCacheDir + `,
reused afterwards), boots it under QEMU with an SD card image as /dev/mmcblk0 and SSH on a port
of 127.0.0.1, waits until SSH answers and prints the fsbench run command that runs there.
board down ends it (exactly the QEMU process it started); fsbench cleanup does too.`,
		Example: `  fsbench board up
  fsbench board up --arch armv7 --card-size 512M
  fsbench board status
  fsbench board down`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.arch, "arch", "arm64", "the board's architecture: arm64 (Cortex-A53) or armv7 (Cortex-A15)")
	pf.StringVar(&f.name, "name", "", "the board's name, to run several at once (default: its architecture)")
	pf.StringVar(&f.state, "state-dir", board.DefaultStateDir, "where running boards are recorded")
	up := &cobra.Command{
		Use: "up", Args: cobra.NoArgs,
		Short: "Build (once) and boot an emulated board; print the command that runs fsbench on it",
		RunE: func(cmd *cobra.Command, _ []string) error {
			arch, err := board.LookupArch(f.arch)
			if err != nil {
				return UsageError{err}
			}
			var size uint64
			if f.cardSize != "" {
				if size, err = bytesize.Parse(f.cardSize); err != nil {
					return usagef("--card-size: %v", err)
				}
			}
			ui := newProgressUI(stdio)
			s, err := board.Up(cmd.Context(), board.Options{Arch: arch, Name: f.name, CacheDir: f.cache, StateDir: f.state,
				Card: f.card, CardSize: size, Port: f.port, Mem: f.mem, SMP: f.smp, BootTimeout: f.timeout,
				Rebuild: f.rebuild, Log: ui.logf})
			if err != nil {
				return err
			}
			printBoard(stdio, s)
			return nil
		},
	}
	ufl := up.Flags()
	ufl.StringVar(&f.cache, "cache", "", "the board's cache: packages, kernel, initramfs, key (default "+board.DefaultCacheDir+"/ARCH)")
	ufl.StringVar(&f.card, "card", "", "SD card image to use (default: a blank one made at boot, removed by board down)")
	ufl.StringVar(&f.cardSize, "card-size", "512M", "size of the SD card image board up makes (a power of two)")
	ufl.IntVar(&f.port, "port", 0, "loopback port for the board's SSH (default: a free one)")
	ufl.IntVar(&f.mem, "mem", 0, "memory in MiB (default 1536 arm64, 1024 armv7)")
	ufl.IntVar(&f.smp, "smp", 2, "CPUs")
	ufl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the board's SSH")
	ufl.BoolVar(&f.rebuild, "rebuild", false, "fetch Debian's package lists again and rebuild the initramfs")
	down := &cobra.Command{
		Use: "down", Args: cobra.NoArgs,
		Short: "End the emulated board (the QEMU process board up started) and remove its card",
		RunE: func(*cobra.Command, []string) error {
			arch, err := board.LookupArch(f.arch)
			if err != nil {
				return UsageError{err}
			}
			name := f.name
			if name == "" {
				name = arch.Name
			}
			s, err := board.DownArch(f.state, name)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "the %s board (QEMU pid %d, port %d) is down\n", s.Arch, s.PID, s.Port)
			return nil
		},
	}
	status := &cobra.Command{
		Use: "status", Args: cobra.NoArgs,
		Short: "List the emulated boards and how to reach them",
		RunE: func(*cobra.Command, []string) error {
			list, err := board.Status(f.state)
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Fprintln(stdio.Out, "no emulated board (fsbench board up starts one)")
			}
			for _, s := range list {
				if !s.Alive() {
					fmt.Fprintf(stdio.Out, "%s: QEMU pid %d has ended (fsbench board down --arch %s removes the record)\n", s.Arch, s.PID, s.Arch)
					continue
				}
				printBoard(stdio, s)
			}
			return nil
		},
	}
	cmd.AddCommand(up, down, status)
	return cmd
}

func printBoard(stdio IO, s *board.State) {
	fmt.Fprintf(stdio.Out, "%s board: QEMU pid %d, kernel %s, SD card %s (%s) as %s, SSH on 127.0.0.1:%d, booted in %.0f s\n",
		s.Arch, s.PID, s.KernelRelease, s.Card, bytesize.Format(s.CardBytes), board.Device, s.Port, s.BootSeconds)
	if len(s.Missing) > 0 {
		fmt.Fprintf(stdio.Out, "without: %v\n", s.Missing)
	}
	fmt.Fprintf(stdio.Out, "console: %s\nshell:   ssh", s.Console)
	for _, a := range s.SSHArgs() {
		fmt.Fprintf(stdio.Out, " %s", a)
	}
	fmt.Fprintf(stdio.Out, "\nrun:     %s\n", s.RunCommand())
}
