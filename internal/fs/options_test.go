package fs

import (
	"strings"
	"testing"
)

func TestCheckMkfsArgs(t *testing.T) {
	tests := []struct {
		fs   string
		args []string
		want string // "" = accepted; else a part of the error
	}{
		// What the defaults, presets and advise use.
		{"ext4", nil, ""},
		{"ext4", []string{"-O", "^has_journal"}, ""},
		{"ext4", []string{"-O", "^has_journal", "-b", "4096", "-E", "stride=4,stripe-width=1024"}, ""},
		{"ext4", []string{"-b4096", "-Fq"}, ""},
		{"ext4", []string{"-J", "size=16"}, ""},
		{"ext4", []string{"-M", "/mnt/data"}, ""}, // a label stored in the superblock
		{"btrfs", []string{"-m", "single"}, ""},
		{"btrfs", []string{"--metadata=single", "--data", "single", "-O", "no-holes"}, ""},
		{"xfs", []string{"-m", "crc=1,reflink=0", "-l", "size=16m,internal"}, ""},
		{"f2fs", []string{"-O", "compression,extra_attr", "-i"}, ""},
		{"nilfs2", []string{"-B", "2048"}, ""},
		{"vfat", []string{"-F", "32", "-s", "16", "-g", "255/63"}, ""},
		{"squashfs", []string{"-comp", "xz", "-Xbcj", "arm", "-b", "1M"}, ""},
		{"erofs", []string{"-zlz4hc,12", "-C65536"}, ""},
		{"erofs", []string{"-E", "ztailpacking"}, ""},

		// Another device.
		{"btrfs", []string{"-m", "single", "/dev/loop4"}, `"/dev/loop4" is not an option`},
		{"btrfs", []string{"loop4"}, `"loop4" is not an option`},
		{"ext4", []string{"-J", "device=/dev/sdb1"}, "-J device=/dev/sdb1 is refused"},
		{"ext4", []string{"-Jdevice=UUID=1234"}, "device=UUID=1234 is refused"},
		{"ext4", []string{"/dev/sda", "1000"}, "is not an option"},
		{"xfs", []string{"-l", "logdev=/dev/sdb,size=64m"}, "-l logdev=/dev/sdb is refused"},
		{"xfs", []string{"-r", "rtdev=/dev/sdc"}, "rtdev=/dev/sdc is refused"},
		{"xfs", []string{"-d", "name=/tmp/x"}, "name=/tmp/x is refused"},
		{"f2fs", []string{"-c", "/dev/sdb"}, "option -c is refused"},
		{"erofs", []string{"--blobdev=/dev/sdb"}, "--blobdev is refused"},
		{"erofs", []string{"/dev/sdb"}, "is not an option"},
		{"squashfs", []string{"-comp", "lzo", "/dev/sdb"}, "is not an option"},
		// A file outside the run.
		{"ext4", []string{"-z", "/root/undo"}, "option -z is refused"},
		{"ext4", []string{"-d", "/etc"}, "option -d is refused"},
		{"ext4", []string{"-E", "root_owner=0:0,offset=/x"}, "looks like a path"},
		{"xfs", []string{"-p", "proto"}, "option -p is refused"},
		{"btrfs", []string{"--rootdir", "/etc"}, "--rootdir is refused"},
		{"btrfs", []string{"--rootdir=/etc"}, "--rootdir is refused"},
		{"vfat", []string{"-C"}, "option -C is refused"},
		{"vfat", []string{"-m", "msg.txt"}, "option -m is refused"},
		{"squashfs", []string{"-pf", "pseudo"}, "-pf is refused"},
		{"squashfs", []string{"-sort", "x"}, "-sort is refused"},
		{"squashfs", []string{"-tar"}, "-tar is refused"},
		{"erofs", []string{"--exclude-path=/a"}, "--exclude-path is refused"},
		// The spellings the tools accept: clusters with the value attached, abbreviations.
		{"xfs", []string{"-fllogdev=card"}, "-l logdev=card is refused"},
		{"xfs", []string{"-fl", "internal,name=card"}, "-l name=card is refused"},
		{"xfs", []string{"-dfile,name=img"}, "-d file is refused"},
		{"f2fs", []string{"-fc/dev/loop4"}, "option -c is refused"},
		{"ext4", []string{"-Fz/some/path"}, "option -z is refused"},
		{"ext4", []string{"-qd/some/dir"}, "option -d is refused"},
		{"ext4", []string{"-FJdevice=/dev/loop4"}, "-J device=/dev/loop4 is refused"},
		{"ext4", []string{"-FJsize=16,device=card"}, "-J device=card is refused"},
		{"btrfs", []string{"--root=/etc"}, "--rootdir is refused"},
		{"btrfs", []string{"-rootdir=/etc"}, "option -r is refused"},
		{"btrfs", []string{"--r", "x"}, "ambiguous"},
		{"btrfs", []string{"--cs", "xxhash", "--check=sha256"}, ""},
		{"btrfs", []string{"--c=xxhash"}, "ambiguous"},
		{"btrfs", []string{"-fmsingle", "/dev/loop4"}, "is not an option"},
		{"erofs", []string{"--exclude-p=x"}, "--exclude-path is refused"},
		{"erofs", []string{"--blob", "/dev/loop4"}, "--blobdev is refused"},
		{"squashfs", []string{"-p", "x f 644 0 0 dd of=/dev/loop4"}, "run a program"},
		{"squashfs", []string{"-action", "exclude@exec(true)"}, "run a program"},
		{"squashfs", []string{"-comp"}, "needs a value"},
		{"vfat", []string{"--mbr=y", "--invariant"}, ""},
		{"vfat", []string{"-Cf2"}, "option -C is refused"},
		// What fsbench does not know.
		{"ext4", []string{"-Q"}, "does not know the option -Q"},
		{"ext4", []string{"-E", "stride=4,journal_path=x"}, `does not know the sub-option "journal_path"`},
		{"xfs", []string{"-l", "size=16m,rtdev=x"}, `does not know the sub-option "rtdev"`},
		{"btrfs", []string{"--frobnicate"}, "does not know the option --frobnicate"},
		{"squashfs", []string{"-frobnicate"}, "does not know the option -frobnicate"},
		{"btrfs", []string{"--quiet=1"}, "takes no value"},
		// Dry runs, and the end of options.
		{"ext4", []string{"-n"}, "dry run"},
		{"xfs", []string{"-N"}, "dry run"},
		{"nilfs2", []string{"-n"}, "dry run"},
		{"ext4", []string{"--", "-weird"}, `"--" ends the options`},
		{"ext4", []string{"-b"}, "needs a value"},
		{"ext4", []string{""}, "is not an option"},
	}
	for _, tc := range tests {
		t.Run(tc.fs+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			k, ok := Lookup(tc.fs)
			if !ok {
				t.Fatalf("no kind %s", tc.fs)
			}
			err := CheckMkfsArgs(k, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("accepted, want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestCheckMountOptions(t *testing.T) {
	tests := []struct {
		opts string
		want string
	}{
		{"", ""},
		{"noatime,dirsync", ""},
		{"compress=zstd:3,ssd", ""},
		{"data=writeback,commit=60", ""},
		{"subvol=/data/a", ""},
		{"compress_extension=*,compress_algorithm=lz4", ""},
		{"device=/dev/loop4", "device=/dev/loop4 is refused"},
		{"noatime,device=/dev/sdb", "is refused"},
		{"journal_path=/dev/sdb1", "is refused"},
		{"journal_dev=2049", "is refused"},
		{"logdev=/dev/sdb", "is refused"},
		{"rtdev=/dev/sdb", "is refused"},
		{"loop", "loop device"},
		{"offset=1048576", "loop option"},
		{"usrjquota=/etc/quota", "looks like it names a path"},
		{"noatime, dirsync", "whitespace"},
		{"bind", "changes an existing mount"},
	}
	for _, tc := range tests {
		t.Run(tc.opts, func(t *testing.T) {
			err := CheckMountOptions(tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("accepted, want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
