package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeModules is /proc/modules and rmmod: a module with users cannot go, one marked pinned
// never can (in use by a mount, or a kernel without module unloading).
type fakeModules struct {
	t      *testing.T
	loaded map[string][]string // module → its users
	pinned map[string]bool
}

func (k *fakeModules) write() {
	var sb strings.Builder
	for m, users := range k.loaded {
		u := "-"
		if len(users) > 0 {
			u = strings.Join(users, ",") + ","
		}
		fmt.Fprintf(&sb, "%s 16384 %d %s Live 0x0000000000000000\n", m, len(users), u)
	}
	if err := os.WriteFile(procModules, []byte(sb.String()), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

func (k *fakeModules) run(_ context.Context, name string, args ...string) ([]byte, error) {
	if name != "rmmod" || len(args) != 1 {
		return nil, fmt.Errorf("unexpected %s %v", name, args)
	}
	m := args[0]
	if len(k.loaded[m]) > 0 || k.pinned[m] {
		return []byte("rmmod: ERROR: Module " + m + " is in use"), errors.New("exit status 1")
	}
	delete(k.loaded, m)
	for o, users := range k.loaded {
		k.loaded[o] = slices.DeleteFunc(users, func(u string) bool { return u == m })
	}
	k.write()
	return nil, nil
}

func TestUnloadKindModules(t *testing.T) {
	dir := t.TempDir()
	old := procModules
	procModules = filepath.Join(dir, "modules")
	t.Cleanup(func() { procModules = old })
	mods := filepath.Join(dir, "lib")
	os.MkdirAll(mods, 0o755)
	os.WriteFile(filepath.Join(mods, "modules.dep"), []byte(
		"kernel/fs/btrfs/btrfs.ko.xz: kernel/crypto/xor.ko.xz kernel/lib/raid6/raid6_pq.ko.xz kernel/lib/libcrc32c.ko.xz\n"+
			"kernel/crypto/xor.ko.xz:\nkernel/lib/raid6/raid6_pq.ko.xz:\nkernel/lib/libcrc32c.ko.xz:\n"+
			"kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz kernel/fs/mbcache.ko.xz\n"), 0o644)
	sys := System{ModulesDir: mods}
	btrfs := Kind{Name: "btrfs", Module: "btrfs"}
	tests := []struct {
		name         string
		before       []string // loaded before the repetition
		after        map[string][]string
		pinned       []string
		wantUnloaded []string
		wantLeft     []string
		wantStays    []string
	}{
		{"what the load brought in goes, users first", []string{"libcrc32c"},
			map[string][]string{"btrfs": nil, "xor": {"btrfs"}, "raid6_pq": {"btrfs"}, "libcrc32c": {"btrfs"}},
			nil, []string{"btrfs", "raid6_pq", "xor"}, nil, []string{"libcrc32c"}},
		{"a driver loaded meanwhile by something else stays", nil,
			map[string][]string{"btrfs": nil, "xor": {"btrfs"}, "raid6_pq": {"btrfs"}, "usb_storage": nil},
			nil, []string{"btrfs", "raid6_pq", "xor"}, nil, []string{"usb_storage"}},
		{"a module the kernel keeps is said", nil,
			map[string][]string{"btrfs": nil, "xor": {"btrfs"}, "raid6_pq": {"btrfs"}},
			[]string{"btrfs"}, nil, []string{"btrfs", "raid6_pq", "xor"}, nil},
		{"loaded before the repetition: left alone", []string{"btrfs", "xor", "raid6_pq"},
			map[string][]string{"btrfs": nil, "xor": {"btrfs"}, "raid6_pq": {"btrfs"}},
			nil, nil, nil, []string{"btrfs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := &fakeModules{t: t, loaded: map[string][]string{}, pinned: map[string]bool{}}
			for _, p := range tc.pinned {
				k.pinned[p] = true
			}
			before := map[string]bool{}
			for _, m := range tc.before {
				before[m] = true
			}
			for m, u := range tc.after {
				k.loaded[m] = slices.Clone(u)
			}
			k.write()
			unloaded, left := UnloadKindModules(context.Background(), k.run, sys, btrfs, before)
			slices.Sort(unloaded)
			if !slices.Equal(unloaded, tc.wantUnloaded) || !slices.Equal(left, tc.wantLeft) {
				t.Errorf("unloaded %q, left %q; want %q, %q", unloaded, left, tc.wantUnloaded, tc.wantLeft)
			}
			for _, m := range tc.wantStays {
				if _, ok := k.loaded[m]; !ok {
					t.Errorf("%s was unloaded; it is not this repetition's", m)
				}
			}
		})
	}
}
