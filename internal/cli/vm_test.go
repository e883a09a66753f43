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
	tests := []struct {
		name, target string
		args         []string
		wantStart    []string
		want         []string
		wantConfig   bool
	}{
		{
			name: "sd card", target: "device:" + guestCard,
			args: []string{"--target", "vm", "--size", "512M", "-n", "2", "--variants", "f2fs,vfat", "-c", "MATRIX",
				"--card", "emmc", "--kernel", "/boot/vmlinuz-x", "-o", "/somewhere/else", "--timeout", "5m"},
			wantStart:  []string{"run", "--target", "device:/dev/mmcblk0", "-o", "DIR", "--destroy", "/dev/mmcblk0"},
			want:       []string{"--repetitions=2", "--variants=f2fs,vfat", "--card=emmc", "--timeout=5m", "--config=INPUTS/matrix.toml"},
			wantConfig: true,
		},
		{
			name: "raw nand", target: "nandsim",
			args: []string{"--target", "vm", "--suite", "free-electrons", "--nand-sizes", "8M,32M", "--nand-no-delays", "-n", "1",
				"--kernel", "/boot/vmlinuz-x", "-o", "/somewhere/else"},
			wantStart: []string{"run", "--target", "nandsim", "-o", "DIR"},
			want:      []string{"--suite=free-electrons", "--nand-sizes=8M,32M", "--nand-no-delays=true", "--repetitions=1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			inputs := filepath.Join(dir, ".vm")
			os.MkdirAll(inputs, 0o755)
			matrix := filepath.Join(t.TempDir(), "matrix.toml")
			os.WriteFile(matrix, []byte("[[variant]]\nfs = \"f2fs\"\n"), 0o644)
			fix := func(s string) string {
				return strings.NewReplacer("MATRIX", matrix, "INPUTS", inputs, "DIR", dir).Replace(s)
			}
			var got []string
			var gerr error
			cmd := newRunCmdWith(IO{Out: io.Discard, Err: io.Discard}, func(_ context.Context, cmd *cobra.Command, _ runFlags, _ IO) error {
				got, gerr = guestArgs(cmd.Flags(), tc.target, dir, inputs)
				return nil
			})
			var args []string
			for _, a := range tc.args {
				args = append(args, fix(a))
			}
			cmd.SetArgs(args)
			if err := cmd.Execute(); err != nil || gerr != nil {
				t.Fatal(err, gerr)
			}
			var wantStart []string
			for _, a := range tc.wantStart {
				wantStart = append(wantStart, fix(a))
			}
			if len(got) < len(wantStart) || !slices.Equal(got[:len(wantStart)], wantStart) {
				t.Fatalf("guest args start %v, want %v", got, wantStart)
			}
			rest := strings.Join(got[len(wantStart):], " ")
			for _, w := range tc.want {
				if !strings.Contains(rest, fix(w)) {
					t.Errorf("guest args %q lack %q", rest, fix(w))
				}
			}
			for _, host := range []string{"--size", "--kernel", "--target=vm", "/somewhere/else", "--destroy"} {
				if strings.Contains(rest, host) {
					t.Errorf("host-only %q passed to the guest: %q", host, rest)
				}
			}
			if _, err := os.Stat(filepath.Join(inputs, "matrix.toml")); (err == nil) != tc.wantConfig {
				t.Errorf("config copied where the guest sees it: %v, want %v", err == nil, tc.wantConfig)
			}
		})
	}
}

func TestVMCardProfile(t *testing.T) {
	tests := []struct {
		spec, want, wantErr string
	}{
		{"vm", "", ""},
		{"vm:simcard", "sd-typical", ""},
		{"vm:simcard:emmc", "emmc", ""},
		{"vm:simcard:/tmp/my card.toml", "/tmp/my card.toml", ""},
		{"vm:simcard:", "", "vm:simcard:PROFILE"},
		{"vm:image", "", "vm:simcard:PROFILE"},
		{"vmx", "", "vm:simcard:PROFILE"},
		{"image", "", "not a vm target"},
	}
	for _, tc := range tests {
		got, err := vmCardProfile(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want one containing %q", tc.spec, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %q, %v; want %q", tc.spec, got, err, tc.want)
		}
	}
}
