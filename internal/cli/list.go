package cli

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/presets"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/vm"
)

// guestSystem is what --target vm's guest kernel offers: the host's tools (they are copied into
// the guest) with the guest kernel's built-in and loadable modules. nil and the reason when no
// guest can be booted here.
func guestSystem(host fs.System) (*fs.System, string) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, "no: qemu-system-x86_64 not found (scripts/setup-vm-debian.sh installs it)"
	}
	kernel, err := vm.DefaultKernel()
	if err != nil {
		return nil, "no: " + err.Error()
	}
	rel, err := vm.KernelRelease(kernel)
	if err != nil {
		return nil, "no: " + err.Error()
	}
	g := fs.System{LookPath: host.LookPath, KernelRelease: rel, ModulesDir: filepath.Join("/lib/modules", rel)}
	return &g, ""
}

func newListCmd(stdio IO) *cobra.Command {
	var preset string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show the known filesystems, default variants, tests and presets, and what this machine can run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if preset != "" {
				// Print the preset's TOML, to copy into a file and edit.
				_, data, err := presets.Load(preset)
				if err != nil {
					return UsageError{err}
				}
				_, err = stdio.Out.Write(data)
				return err
			}
			sys, err := fs.HostSystem()
			if err != nil {
				return err
			}
			guest, guestWhy := guestSystem(sys)
			w := tabwriter.NewWriter(stdio.Out, 2, 8, 2, ' ', 0)
			fmt.Fprintln(w, "FILESYSTEM\tTOOL\tPACKAGE\tKERNEL\tIN GUEST (--target vm)\tRUNS HERE")
			for _, k := range fs.Kinds() {
				av := sys.Check(k)
				runs := "yes"
				if !av.Runs {
					runs = "no: " + av.Reason
				}
				inGuest := guestWhy
				switch {
				case k.NotMainline != "":
					// The reason, said once, in the last column.
					inGuest = "no (" + fs.KernelNotMainline + ")"
				case guest != nil:
					if g := guest.Check(k); g.Runs {
						inGuest = "yes (" + g.Kernel + ")"
					} else {
						inGuest = "no: " + g.Reason
					}
				}
				if k.Flash && av.Runs {
					runs = "yes, on nandsim (--target nandsim --suite free-electrons)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Name, k.Tool, k.Package, av.Kernel, inGuest, runs)
			}
			w.Flush()
			if guest == nil {
				fmt.Fprintf(stdio.Out, "guest: %s\n", guestWhy)
			}
			fmt.Fprintln(stdio.Out, "\nDEFAULT VARIANTS")
			w = tabwriter.NewWriter(stdio.Out, 2, 8, 2, ' ', 0)
			for _, v := range plan.DefaultVariants() {
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", v.Name, v.FS, strings.Join(v.MkfsArgs, " "), v.MountOptions)
			}
			w.Flush()
			fmt.Fprintf(stdio.Out, "\nRAW NAND VARIANTS (--suite %s; each runs on every --nand-sizes partition, default %s)\n", plan.FlashSuite, sizeList(plan.DefaultNANDSizes))
			w = tabwriter.NewWriter(stdio.Out, 2, 8, 2, ' ', 0)
			for _, v := range plan.FlashVariants() {
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", v.Name, v.FS, strings.Join(v.MkfsArgs, " "), v.MountOptions)
			}
			w.Flush()
			for _, name := range suites.Names() {
				fmt.Fprintf(stdio.Out, "\nSUITE %s\n", name)
				w = tabwriter.NewWriter(stdio.Out, 2, 8, 2, ' ', 0)
				s, _ := suites.Lookup(name)
				for _, t := range s.Order() {
					fmt.Fprintf(w, "  %s\t%s\n", t, catalog.Get(t).DocIn(name))
				}
				w.Flush()
			}
			fmt.Fprintf(stdio.Out, "\nPRESETS (fsbench run --preset NAME; fsbench list --preset NAME prints one)\n  %s\n", strings.Join(presets.Names(), ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&preset, "preset", "", "print this preset's TOML instead")
	return cmd
}

// sizeList is a comma-separated list of partition sizes as --nand-sizes takes them.
func sizeList(sizes []uint64) string {
	var parts []string
	for _, n := range sizes {
		parts = append(parts, bytesize.Label(n))
	}
	return strings.Join(parts, ",")
}
