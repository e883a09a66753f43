package kmod

import (
	"reflect"
	"strings"
	"testing"
)

const dep = `kernel/fs/f2fs/f2fs.ko.xz: kernel/lib/lz4/lz4_compress.ko.xz
kernel/lib/lz4/lz4_compress.ko.xz:
kernel/fs/fat/vfat.ko: kernel/fs/fat/fat.ko
kernel/fs/fat/fat.ko:
kernel/fs/nls/nls_iso8859-1.ko:
kernel/crypto/crc32c_generic.ko:
kernel/drivers/gpu/drm/drm.ko:
kernel/drivers/mmc/host/sdhci-pci.ko: kernel/drivers/mmc/host/sdhci.ko
kernel/drivers/mmc/host/sdhci.ko:
`

func TestSelect(t *testing.T) {
	deps, err := ReadDep(strings.NewReader(dep))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		roots, whole     []string
		wantMods, wantNo []string
	}{
		{"the guest's: a dependency, a name with a dash, a built-in", []string{"f2fs", "nls_iso8859-1", "ext4"}, []string{"kernel/crypto"},
			[]string{"kernel/crypto/crc32c_generic.ko", "kernel/fs/f2fs/f2fs.ko.xz", "kernel/fs/nls/nls_iso8859-1.ko", "kernel/lib/lz4/lz4_compress.ko.xz"},
			[]string{"ext4"}},
		{"a board's: a driver with its dependency, whole directories", []string{"f2fs", "sdhci_pci", "not_there"}, []string{"kernel/crypto", "kernel/fs/nls/"},
			[]string{"kernel/crypto/crc32c_generic.ko", "kernel/drivers/mmc/host/sdhci-pci.ko", "kernel/drivers/mmc/host/sdhci.ko",
				"kernel/fs/f2fs/f2fs.ko.xz", "kernel/fs/nls/nls_iso8859-1.ko", "kernel/lib/lz4/lz4_compress.ko.xz"},
			[]string{"not_there"}},
	} {
		mods, missing := Select(deps, tc.roots, tc.whole)
		if !reflect.DeepEqual(mods, tc.wantMods) || !reflect.DeepEqual(missing, tc.wantNo) {
			t.Errorf("%s:\n got %v, missing %v\nwant %v, missing %v", tc.name, mods, missing, tc.wantMods, tc.wantNo)
		}
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel/fs/nls/nls_iso8859-1.ko.xz":        "nls_iso8859_1",
		"kernel/fs/ext4/ext4.ko":                   "ext4",
		"kernel/drivers/mmc/host/sdhci-pci.ko.zst": "sdhci_pci",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
