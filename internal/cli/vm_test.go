package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestGuestArgs(t *testing.T) {
	dir := t.TempDir()
	inputs := filepath.Join(dir, ".vm")
	os.MkdirAll(inputs, 0o755)
	matrix := filepath.Join(t.TempDir(), "matrix.toml")
	os.WriteFile(matrix, []byte("[[variant]]\nfs = \"f2fs\"\n"), 0o644)
	var got []string
	var gerr error
	cmd := newRunCmdWith(IO{Out: io.Discard, Err: io.Discard}, func(_ context.Context, cmd *cobra.Command, _ runFlags, _ IO) error {
		got, gerr = guestArgs(cmd.Flags(), dir, inputs)
		return nil
	})
	cmd.SetArgs([]string{"--target", "vm", "--size", "512M", "-n", "2", "--variants", "f2fs,vfat", "-c", matrix,
		"--card", "emmc", "--kernel", "/boot/vmlinuz-x", "-o", "/somewhere/else", "--timeout", "5m"})
	if err := cmd.Execute(); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	want := []string{"run", "--target", "device:/dev/mmcblk0", "--destroy", "/dev/mmcblk0", "-o", dir}
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("guest args start %v, want %v", got, want)
	}
	rest := strings.Join(got[len(want):], " ")
	for _, w := range []string{"--repetitions=2", "--variants=f2fs,vfat", "--card=emmc", "--timeout=5m", "--config=" + filepath.Join(inputs, "matrix.toml")} {
		if !strings.Contains(rest, w) {
			t.Errorf("guest args %q lack %q", rest, w)
		}
	}
	for _, host := range []string{"--size", "--kernel", "--target=vm", "/somewhere/else"} {
		if strings.Contains(rest, host) {
			t.Errorf("host-only %q passed to the guest: %q", host, rest)
		}
	}
	if _, err := os.Stat(filepath.Join(inputs, "matrix.toml")); err != nil {
		t.Errorf("the config was not copied where the guest sees it: %v", err)
	}
}
