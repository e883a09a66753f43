package report

import (
	"fmt"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/results"
)

// deviceName is what the filesystems were made on, short, for the report's title: a simulated
// card by its profile (behind a guest's SD card, sysfs names QEMU's card model), else the card's
// own name where sysfs gives one, else what fsbench made.
func deviceName(r *results.Run) string {
	if r.Target.SimulatedCard() && r.Target.CardProfile != "" {
		return "a simulated " + r.Target.CardProfile + " card"
	}
	if r.Device != nil {
		for _, k := range []string{"name", "model"} {
			if s := strings.TrimSpace(r.Device.Device[k]); s != "" {
				return s + " (" + r.Device.Path + ")"
			}
		}
	}
	switch r.Target.Kind {
	case results.KindNandsim:
		return "raw NAND"
	case results.KindImage:
		return "an image file"
	}
	if r.Target.Device != "" {
		return r.Target.Device
	}
	return "this device"
}

// TargetText says where the filesystems were made, in full: the kind of device and how it was
// reached (a simulated card's profile and time scale, a guest's kernel, a board), for the
// setup line of the report and the head of the terminal summary.
func TargetText(r *results.Run) string {
	t := r.Target
	var dev string
	switch t.Kind {
	case results.KindSimcard:
		dev = fmt.Sprintf("a simulated card, profile %s", t.Profile)
		if t.TimeScale != 0 && t.TimeScale != 1 {
			dev += fmt.Sprintf(", its modelled waits scaled by %g (times are not a real card's)", t.TimeScale)
		}
		switch {
		case t.CardVia == results.CardBehindGuestSD:
			dev += ", behind the guest's emulated SD card (/dev/mmcblk0)"
		case r.Guest != nil:
			// The powercut suite in a guest: the card was served in the guest (internal/targets/vm).
			dev += ", served in the guest on a loop device" + directIO(t)
		default:
			dev += ", on a loop device" + directIO(t)
		}
	case results.KindImage:
		dev = "a loop device over a sparse image file" + directIO(t)
	case results.KindDevice:
		dev = "the device " + t.Device
		if r.Device != nil {
			var id []string
			for _, k := range []string{"name", "vendor", "model", "manfid", "oemid", "date"} {
				if s := strings.TrimSpace(r.Device.Device[k]); s != "" {
					id = append(id, k+" "+s)
				}
			}
			if len(id) > 0 {
				dev += " (" + strings.Join(id, ", ") + ")"
			}
		}
	case results.KindNandsim:
		dev = "a simulated raw NAND chip (nandsim)"
	default:
		dev = t.Device
	}
	if t.SizeBytes > 0 {
		dev += ", " + bytesize.Format(t.SizeBytes)
	}
	if c := cardCheckText(r); c != "" {
		dev += "; " + c
	}
	// The scheduler decides the order the card sees its writes in, and so its card time and
	// wear (xfs's on sd-typical was 3 times higher with none than with mq-deadline). One fsbench
	// set is named; otherwise one the device already had, unless it is none, a loop device's
	// default. A loop device keeps its scheduler from one user to the next.
	if sched := t.Scheduler; sched != "" {
		dev += ", I/O scheduler " + sched
	} else if sched := deviceScheduler(r); sched != "" && sched != "none" {
		dev += ", I/O scheduler " + sched + " (the device's own)"
	}
	switch {
	case r.Remote != nil:
		board := r.Remote.Hostname
		if r.Remote.Model != "" {
			board += " (" + r.Remote.Model + ")"
		}
		dev += fmt.Sprintf("; on the board %s, %s, kernel %s, reached over SSH", board, r.Remote.Arch, r.Remote.KernelRelease)
	case r.Guest != nil:
		dev += fmt.Sprintf("; in a QEMU guest (%s), kernel %s", r.Guest.Accel, r.Guest.KernelRelease)
		if r.Guest.Accel == "tcg" {
			dev += ": times and rates are the emulator's, not a board's"
		}
	}
	return dev
}

func directIO(t results.Target) string {
	if t.DirectIO {
		return " with direct I/O"
	}
	return " without direct I/O (the host's page cache may answer reads)"
}

// deviceScheduler is the scheduler the device had when the run identified it: the bracketed
// name in its queue/scheduler ("none [mq-deadline] kyber bfq"), or "" when not recorded.
func deviceScheduler(r *results.Run) string {
	if r.Device == nil {
		return ""
	}
	for _, f := range strings.Fields(r.Device.Queue["scheduler"]) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			return strings.Trim(f, "[]")
		}
	}
	return ""
}
