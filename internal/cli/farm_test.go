package cli

import (
	"context"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

func TestSplitTargets(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"one", []string{"labgrid:a"}, []string{"labgrid:a"}},
		{"comma list", []string{"labgrid:a,labgrid:b"}, []string{"labgrid:a", "labgrid:b"}},
		{"spaces", []string{"labgrid:a, labgrid:b/dev/mmcblk0p3"}, []string{"labgrid:a", "labgrid:b/dev/mmcblk0p3"}},
		{"repeated", []string{"labgrid:a", "ssh://root@board:2222"}, []string{"labgrid:a", "ssh://root@board:2222"}},
		{"mixed boards", []string{"labgrid:a,ssh://board"}, []string{"labgrid:a", "ssh://board"}},
		{"a local target keeps its comma", []string{"simcard:/profiles/a,b.toml"}, []string{"simcard:/profiles/a,b.toml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := splitTargets(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("splitTargets(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// Each board's run of a farm gets the flags the user gave, as given, but its own target and
// results directory.
func TestFarmArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"target and out are the farm's", []string{"--target", "labgrid:a,labgrid:b", "-o", "x", "--force"}, nil},
		{"values", []string{"--target", "labgrid:a,labgrid:b", "-n", "1", "--size", "64M", "--variants", "ext4,ext2"},
			[]string{"--repetitions=1", "--size=64M", "--variants=ext4,ext2"}},
		{"booleans and repeated flags", []string{"--power-cycle", "--ssh-option", "ConnectTimeout=30", "--ssh-option", "BatchMode=yes", "--labgrid-coordinator", "127.0.0.1:20408"},
			[]string{"--labgrid-coordinator=127.0.0.1:20408", "--power-cycle=true", "--ssh-option=ConnectTimeout=30", "--ssh-option=BatchMode=yes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			cmd := newRunCmdWith(IO{}, func(_ context.Context, cmd *cobra.Command, _ runFlags, _ IO) error {
				got = farmArgs(cmd.Flags())
				return nil
			})
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("farmArgs = %q, want %q", got, tc.want)
			}
		})
	}
}
