package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/cardid"
)

// USBInfo says whether the device is reached through USB (a card reader, a stick).
type USBInfo struct {
	Through bool   `json:"through_usb"`
	Path    string `json:"sysfs_path,omitempty"`
	Warning string `json:"warning,omitempty"`
}

// usbWarning is what a USB path means for the probe and the advice.
const usbWarning = "the device is behind USB (a card reader or stick): USB mass storage reports rotational=1 whatever the medium (set it to 0 by hand or with a udev rule), the reader hides the card's own registers (no CID, no preferred_erase_size, no eMMC life time), may translate or delay requests (flattening the steps the alignment test looks for), and some readers reject O_DIRECT or discard; a built-in SD slot gives truer figures"

// EMMC is the eMMC health the card reports in its EXT_CSD register (JEDEC JESD84-B51 §7.4),
// read with mmc-utils' "mmc extcsd read".
type EMMC struct {
	// Skipped says why nothing was read ("" when read).
	Skipped string `json:"skipped,omitempty"`
	// LifeTimeA and LifeTimeB are DEVICE_LIFE_TIME_EST_TYP_A/B: 0x01 means 0–10 % of the
	// rated life used, ... 0x0A 90–100 %, 0x0B exceeded. Type A is usually the SLC area, B the
	// MLC/TLC area.
	LifeTimeA int `json:"life_time_est_a,omitempty"`
	LifeTimeB int `json:"life_time_est_b,omitempty"`
	// PreEOL is PRE_EOL_INFO, the reserved blocks consumed: 1 normal, 2 warning (80 %),
	// 3 urgent (90 %).
	PreEOL int `json:"pre_eol,omitempty"`
	// Summary puts those in words.
	Summary string `json:"summary,omitempty"`
}

// Identify fills the identity fields of r for path: kind, sysfs identity, partition start,
// USB path and eMMC health (sysfs is normally "/sys"; mmc is the mmc-utils binary to use,
// "" to look for "mmc" in PATH).
func Identify(ctx context.Context, r *Result, path, sysfs, mmc string) error {
	r.Device = path
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("probe %s: %w", path, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("probe %s: %w", path, err)
	}
	if st.Mode().IsRegular() {
		r.Kind = "file"
		r.EMMC.Skipped = "an image file, not a device"
		return nil
	}
	if st.Mode()&os.ModeDevice == 0 || st.Mode()&os.ModeCharDevice != 0 {
		return fmt.Errorf("probe %s: not a block device or an image file", path)
	}
	name := filepath.Base(real)
	id, err := blockdev.Identify(sysfs, name)
	if err != nil {
		return fmt.Errorf("probe %s: %w", path, err)
	}
	r.Identity = &id
	dir, err := filepath.EvalSymlinks(filepath.Join(sysfs, "class", "block", name))
	if err != nil {
		return fmt.Errorf("probe %s: %w", path, err)
	}
	r.Kind = "disk"
	if b, err := os.ReadFile(filepath.Join(dir, "start")); err == nil {
		r.Kind = "partition"
		sectors, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		r.PartitionStart = sectors * blockdev.SectorSize
	}
	r.USB = usbInfo(dir)
	if r.USB.Through {
		r.Warnings = append(r.Warnings, r.USB.Warning)
	}
	if r.Kind == "partition" {
		r.Warnings = append(r.Warnings, fmt.Sprintf("probing a partition that starts %s (%d bytes) into its disk: boundaries are found relative to the partition's start; probe the whole disk to see the card's own alignment", formatSize(r.PartitionStart), r.PartitionStart))
	}
	r.EMMC = emmcHealth(ctx, id, mmc)
	return nil
}

// usbInfo reports whether the sysfs device path (resolved) passes through a USB bus.
func usbInfo(sysDir string) USBInfo {
	if strings.Contains(sysDir, "/usb") {
		return USBInfo{Through: true, Path: sysDir, Warning: usbWarning}
	}
	return USBInfo{Path: sysDir}
}

// emmcHealth runs "mmc extcsd read" for an eMMC (an mmcblk device whose MMC core type is
// "MMC"; SD cards have no EXT_CSD).
func emmcHealth(ctx context.Context, id blockdev.Identity, mmc string) EMMC {
	if !strings.HasPrefix(id.Name, "mmcblk") {
		return EMMC{Skipped: "not an mmcblk device (SD/eMMC on an MMC host): no EXT_CSD to read"}
	}
	if t := id.Device["type"]; t != "MMC" {
		return EMMC{Skipped: fmt.Sprintf("an %s card, not eMMC: only eMMC has the EXT_CSD life-time registers", orUnknown(t))}
	}
	if mmc == "" {
		p, err := exec.LookPath("mmc")
		if err != nil {
			return EMMC{Skipped: "mmc-utils is not installed (Debian: apt install mmc-utils): eMMC life time not read"}
		}
		mmc = p
	}
	disk := "/dev/" + mmcDisk.FindString(id.Name) // mmcblk0p2 -> mmcblk0: EXT_CSD is the disk's
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, mmc, "extcsd", "read", disk).CombinedOutput()
	if err != nil {
		return EMMC{Skipped: fmt.Sprintf("%s extcsd read %s failed: %v: %s", mmc, disk, err, strings.TrimSpace(string(out)))}
	}
	e, err := parseExtCSD(string(out))
	if err != nil {
		return EMMC{Skipped: fmt.Sprintf("%s extcsd read %s: %v", mmc, disk, err)}
	}
	return e
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown-type"
	}
	return s
}

var mmcDisk = regexp.MustCompile(`^mmcblk[0-9]+`)

var extCSDField = regexp.MustCompile(`\[(EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A|EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B|EXT_CSD_PRE_EOL_INFO)\]\s*:\s*0x([0-9a-fA-F]+)`)

// parseExtCSD reads the life-time fields from mmc-utils' output, lines such as
//
//	eMMC Life Time Estimation A [EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A]: 0x01
//	eMMC Pre EOL information [EXT_CSD_PRE_EOL_INFO]: 0x01
func parseExtCSD(out string) (EMMC, error) {
	var e EMMC
	found := 0
	for _, m := range extCSDField.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseUint(m[2], 16, 8)
		if err != nil {
			return e, fmt.Errorf("%s: %w", m[1], err)
		}
		found++
		switch m[1] {
		case "EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A":
			e.LifeTimeA = int(v)
		case "EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B":
			e.LifeTimeB = int(v)
		case "EXT_CSD_PRE_EOL_INFO":
			e.PreEOL = int(v)
		}
	}
	if found == 0 {
		return e, errors.New("no life-time fields in the output (eMMC older than 5.0?)")
	}
	e.Summary = fmt.Sprintf("life time used: type A %s, type B %s; reserved blocks: %s", lifeText(e.LifeTimeA), lifeText(e.LifeTimeB), eolText(e.PreEOL))
	return e, nil
}

func lifeText(v int) string { return cardid.LifeText(v) }

func eolText(v int) string { return cardid.EOLText(v) }
