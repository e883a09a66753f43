package cardid

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
)

// Reading is one reading of a device's identity and health.
type Reading struct {
	Time   time.Time `json:"time"`
	Device string    `json:"device"`
	// Kind is what was found: "SD", "MMC" (eMMC), "NVMe", "USB" (a reader or stick that hides
	// the card), "image" or "other".
	Kind string `json:"kind"`
	// Source is the directory the registers were read from: the card's sysfs device
	// directory, or the simulated card's device directory (Simulated).
	Source    string `json:"source,omitempty"`
	Simulated bool   `json:"simulated,omitempty"`
	// SizeBytes is what the block device announces.
	SizeBytes uint64  `json:"size_bytes,omitempty"`
	CID       *CID    `json:"cid,omitempty"`
	CSD       *CSD    `json:"csd,omitempty"`
	ExtCSD    *ExtCSD `json:"ext_csd,omitempty"`
	// Model and SerialHash identify a device without a CID (NVMe, USB): its model and its
	// hashed serial.
	Model      string  `json:"model,omitempty"`
	SerialHash string  `json:"serial_hash,omitempty"`
	Health     *Health `json:"health,omitempty"`
	// Notes say what was not read, and why.
	Notes []string `json:"notes,omitempty"`
}

// Files of a simulated card's device directory (internal/simcard serves them beside its card
// file, in the format the kernel's sysfs and debugfs use for a real card's).
const (
	SimDeviceDir = "device"
	SimExtCSD    = "ext_csd"   // hex, as debugfs prints it
	SimGenCmd56  = "gen_cmd56" // the CMD56 health block, hex
)

// Options change where Read looks.
type Options struct {
	// Sysfs is the sysfs root ("" = "/sys").
	Sysfs string
	// NoCommands: never send a command to the card (MMC_IOC_CMD, NVMe admin): registers from
	// sysfs only.
	NoCommands bool
}

// Read takes one reading of dev (a block device, a partition, or a loop device over a
// simulated card or an image): identity from sysfs and health by the card's own commands, read
// only. What it cannot read is said in Notes; the error is for a device it cannot look at.
func Read(ctx context.Context, dev string, opt Options) (*Reading, error) {
	sysfs := opt.Sysfs
	if sysfs == "" {
		sysfs = "/sys"
	}
	r := &Reading{Time: time.Now().UTC().Truncate(time.Second), Device: dev, Kind: "other"}
	real, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return nil, fmt.Errorf("read card identity of %s: %w", dev, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("read card identity of %s: %w", dev, err)
	}
	if st.Mode().IsRegular() {
		r.Kind, r.SizeBytes = "image", uint64(st.Size())
		r.Notes = append(r.Notes, "an image file: no card registers to read")
		return r, nil
	}
	id, err := blockdev.Identify(sysfs, filepath.Base(real))
	if err != nil {
		return nil, fmt.Errorf("read card identity of %s: %w", dev, err)
	}
	r.SizeBytes = id.SizeBytes
	if id.Loop != nil {
		simDir := filepath.Join(filepath.Dir(id.Loop.BackingFile), SimDeviceDir)
		if _, err := os.Stat(filepath.Join(simDir, "cid")); err == nil {
			r.Source, r.Simulated = simDir, true
			readCard(ctx, r, simDir, "", opt)
			return r, nil
		}
		r.Notes = append(r.Notes, fmt.Sprintf("a loop device over %s: no card registers to read", id.Loop.BackingFile))
		return r, nil
	}
	devDir, err := deviceDir(sysfs, filepath.Base(real))
	if err != nil {
		return nil, fmt.Errorf("read card identity of %s: %w", dev, err)
	}
	r.Source = devDir
	switch {
	case fileExists(filepath.Join(devDir, "cid")):
		readCard(ctx, r, devDir, "/dev/"+diskName(filepath.Base(real)), opt)
	case strings.HasPrefix(filepath.Base(real), "nvme"):
		readNVMe(r, devDir, "/dev/"+diskName(filepath.Base(real)), opt)
	default:
		if strings.Contains(devDir, "/usb") {
			r.Kind = "USB"
			r.Notes = append(r.Notes, "behind USB (a card reader or stick): the reader hides the card's CID, CSD and health")
		}
		r.Model = strings.TrimSpace(attr(devDir, "vendor") + " " + attr(devDir, "model"))
		if s := attr(devDir, "serial"); s != "" {
			r.SerialHash = HashSerial(r.Model, s)
		}
	}
	return r, nil
}

// readCard reads an SD card's or eMMC's registers from dir (sysfs or simulated) and its health
// by command on node (none when node is "": the simulated card serves it as files).
func readCard(ctx context.Context, r *Reading, dir, node string, opt Options) {
	r.Kind = attr(dir, "type")
	cidReg, err := ParseRegister(attr(dir, "cid"))
	if err != nil {
		r.Notes = append(r.Notes, "cid: "+err.Error())
	}
	csdReg, cerr := ParseRegister(attr(dir, "csd"))
	if cerr != nil {
		r.Notes = append(r.Notes, "csd: "+cerr.Error())
	}
	switch r.Kind {
	case KindMMC:
		readExtCSD(r, dir, node, opt)
		rev := -1
		if r.ExtCSD != nil {
			rev = r.ExtCSD.Rev
		}
		if err == nil {
			c := ParseMMCCID(cidReg, rev)
			r.CID = &c
		}
		if cerr == nil {
			c := ParseMMCCSD(csdReg)
			r.CSD = &c
		}
	case KindSD:
		if err == nil {
			c := ParseSDCID(cidReg)
			r.CID = &c
		}
		if cerr == nil {
			if c, err := ParseSDCSD(csdReg); err != nil {
				r.Notes = append(r.Notes, "csd: "+err.Error())
			} else {
				r.CSD = &c
			}
		}
		readSDHealth(r, dir, node, opt)
	default:
		r.Notes = append(r.Notes, fmt.Sprintf("card type %q (SDIO or unknown): registers not decoded", r.Kind))
	}
	_ = ctx
}

// readExtCSD reads an eMMC's EXT_CSD: by CMD8 through MMC_IOC_CMD (fresh: the kernel's sysfs
// life_time and pre_eol_info are read once when the card is initialised, so after a run they
// still show the values from before it), from a simulated card's file, or, failing both, the
// kernel's cached attributes.
func readExtCSD(r *Reading, dir, node string, opt Options) {
	var (
		e   ExtCSD
		err error
		src string
	)
	switch {
	case node == "":
		src = filepath.Join(dir, SimExtCSD)
		e, err = ParseExtCSDHex(attr(dir, SimExtCSD))
	case opt.NoCommands:
		err = errors.New("commands to the card are off")
	default:
		src = "CMD8 SEND_EXT_CSD (MMC_IOC_CMD) on " + node
		var raw []byte
		if raw, err = mmcRead(node, mmcSendExtCSD, 0); err == nil {
			e, err = ParseExtCSD(raw)
		}
	}
	if err == nil {
		r.ExtCSD = &e
		r.Health = e.Health(src)
		return
	}
	r.Notes = append(r.Notes, "EXT_CSD: "+err.Error())
	// The kernel's copy, from when the card was initialised (drivers/mmc/core/mmc.c prints
	// life_time as "0x%02x 0x%02x" and pre_eol_info as "0x%02x").
	lt := strings.Fields(attr(dir, "life_time"))
	eol := attr(dir, "pre_eol_info")
	if len(lt) == 2 && eol != "" {
		a, _ := strconv.ParseUint(strings.TrimPrefix(lt[0], "0x"), 16, 8)
		b, _ := strconv.ParseUint(strings.TrimPrefix(lt[1], "0x"), 16, 8)
		p, _ := strconv.ParseUint(strings.TrimPrefix(eol, "0x"), 16, 8)
		e := ExtCSD{LifeTimeA: int(a), LifeTimeB: int(b), PreEOL: int(p)}
		r.Health = e.Health(filepath.Join(dir, "life_time") + " (the kernel's copy from when the card was initialised: it does not move during a run)")
	}
}

// readSDHealth reads an SD card's vendor health block where fsbench knows the vendor's
// published format: Transcend's (CMD56). A simulated card serves its block as a file.
func readSDHealth(r *Reading, dir, node string, opt Options) {
	var (
		raw []byte
		err error
		src string
	)
	switch {
	case node == "":
		src = filepath.Join(dir, SimGenCmd56)
		raw, err = hexBytes(attr(dir, SimGenCmd56), smartSize)
	case r.CID == nil || r.CID.ManufacturerID != TranscendMID:
		mid := "unknown"
		if r.CID != nil {
			mid = fmt.Sprintf("0x%02x", r.CID.ManufacturerID)
		}
		// CMD56's meaning is the vendor's: a card of another maker may take the same
		// argument for something else, so it is never sent to one.
		r.Notes = append(r.Notes, fmt.Sprintf("no health report: SD cards have no standard one, and fsbench reads only vendor formats that are published (Transcend's, manufacturer 0x%02x); this card's manufacturer is %s", TranscendMID, mid))
		return
	case opt.NoCommands:
		r.Notes = append(r.Notes, "health: commands to the card are off")
		return
	default:
		src = fmt.Sprintf("CMD56 arg 0x%08x (MMC_IOC_CMD) on %s", TranscendCMD56Arg, node)
		raw, err = mmcRead(node, mmcGenCmd, TranscendCMD56Arg)
	}
	if err == nil {
		var s TranscendSMART
		if s, err = ParseTranscendSMART(raw); err == nil {
			r.Health = s.Health(src)
			return
		}
	}
	r.Notes = append(r.Notes, "health: "+err.Error())
}

// readNVMe reads an NVMe device's model, hashed serial and SMART / Health log.
func readNVMe(r *Reading, devDir, node string, opt Options) {
	r.Kind = "NVMe"
	r.Model = attr(devDir, "model")
	if s := attr(devDir, "serial"); s != "" {
		r.SerialHash = HashSerial(r.Model, s)
	}
	if opt.NoCommands {
		r.Notes = append(r.Notes, "health: commands to the device are off")
		return
	}
	raw, err := nvmeLog(node, NVMeSMARTLog)
	if err == nil {
		r.Health, err = ParseNVMeSMART(raw, "NVMe Get Log Page 02h on "+node)
	}
	if err != nil {
		r.Notes = append(r.Notes, "health: "+err.Error())
	}
}

// deviceDir is the sysfs directory of the hardware behind a block device (a partition's is
// its disk's): <sysfs>/class/block/<disk>/device.
func deviceDir(sysfs, name string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(sysfs, "class", "block", name))
	if err != nil {
		return "", err
	}
	if fileExists(filepath.Join(dir, "partition")) {
		dir = filepath.Dir(dir)
	}
	d, err := filepath.EvalSymlinks(filepath.Join(dir, "device"))
	if errors.Is(err, fs.ErrNotExist) {
		return dir, nil // a virtual device: no hardware directory
	}
	return d, err
}

// diskName is the disk of a partition name (mmcblk0p2 → mmcblk0, nvme0n1p1 → nvme0n1); other
// names are returned as they are.
func diskName(name string) string {
	if m := partName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}

var partName = regexp.MustCompile(`^(mmcblk[0-9]+|nvme[0-9]+n[0-9]+)p[0-9]+$`)

func attr(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
